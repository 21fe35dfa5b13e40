package worker

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/flightio"
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

// doGetStream is a DoGet server stream that keeps what it is sent.
type doGetStream struct {
	flight.FlightService_DoGetServer
	capture
}

func (d *doGetStream) Send(fd *flight.FlightData) error { return d.capture.Send(fd) }

// The audit's countingStream sits under the schema sent first
// (flightio.SendSchema) and the merged batches send streams after it, so
// the line counts every row streamed and the schema once.
func TestCountingStreamUnderStreamingWriter(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for _, n := range []int{5, 0, 1000} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := 0; i < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	rdr, err := array.NewRecordReader(sc, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	for _, r := range recs {
		r.Release()
	}
	var under doGetStream
	e := &audit.Entry{Event: audit.EventFetch}
	var stream flight.DataStreamWriter = &countingStream{FlightService_DoGetServer: &under, e: e}
	if stream, err = flightio.SendSchema(stream, sc, memory.DefaultAllocator); err != nil {
		t.Fatal(err)
	}
	s := &Server{opts: Options{Allocator: memory.DefaultAllocator}}
	rows, batches, err := s.send(context.Background(), sc, rdr, stream)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 1005 || batches != 2 {
		t.Fatalf("sent %d rows in %d batches, want 1005 in 2", rows, batches)
	}
	if e.Rows != 1005 || e.Bytes == 0 {
		t.Fatalf("audit counted %d rows, %d bytes; want 1005 rows and some bytes", e.Rows, e.Bytes)
	}
	if len(under.sent) != 3 {
		t.Fatalf("client got %d messages, want the schema and 2 batches", len(under.sent))
	}
}
