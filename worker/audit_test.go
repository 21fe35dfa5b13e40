package worker

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
)

// capture keeps what a Flight writer sends (a copy: the writer reuses
// its message, as a gRPC stream serializes it at once).
type capture struct{ sent []*flight.FlightData }

func (c *capture) Send(d *flight.FlightData) error {
	c.sent = append(c.sent, proto.Clone(d).(*flight.FlightData))
	return nil
}

func TestBatchRows(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	var c capture
	wr := flight.NewRecordWriter(&c, ipc.WithSchema(sc))
	for _, n := range []int{3, 70000, 0} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := 0; i < n; i++ {
			b.Field(0).(*array.StringBuilder).Append("x")
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := wr.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	wr.Close()
	var rows int64
	for _, d := range c.sent {
		rows += batchRows(d.DataHeader)
	}
	if rows != 70003 {
		t.Fatalf("counted %d rows in %d messages, want 70003", rows, len(c.sent))
	}
	if batchRows(nil) != 0 || batchRows([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}) != 0 {
		t.Error("garbage counted as rows")
	}
}
