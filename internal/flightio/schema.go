package flightio

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
)

// SendSchema sends schema's IPC message on stream now and returns the
// stream to give flight.NewRecordWriter (with the same schema) for the
// batches: that writer's own schema message is not sent again, so the
// client sees the schema once, first.
func SendSchema(stream flight.DataStreamWriter, schema *arrow.Schema, mem memory.Allocator) (flight.DataStreamWriter, error) {
	var c capture
	w := flight.NewRecordWriter(&c, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil {
		return nil, err
	}
	for _, fd := range c.msgs {
		if err := stream.Send(fd); err != nil {
			return nil, err
		}
	}
	return &skipFirst{DataStreamWriter: stream, skip: len(c.msgs), n: len(c.msgs)}, nil
}

// Again returns, for a stream SendSchema returned, the stream to give a
// second record writer of the same schema (a fragment run again before any
// batch left): its schema message is not sent either. Other streams are
// returned as they are.
func Again(stream flight.DataStreamWriter) flight.DataStreamWriter {
	if s, ok := stream.(*skipFirst); ok {
		return &skipFirst{DataStreamWriter: s.DataStreamWriter, skip: s.n, n: s.n}
	}
	return stream
}

// capture keeps copies of the messages a writer sends (the writer reuses
// its buffers).
type capture struct{ msgs []*flight.FlightData }

func (c *capture) Send(fd *flight.FlightData) error {
	c.msgs = append(c.msgs, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// skipFirst drops the first skip messages: the schema a writer sends when
// it starts.
type skipFirst struct {
	flight.DataStreamWriter
	skip, n int // left to drop, and how many the schema takes
}

func (s *skipFirst) Send(fd *flight.FlightData) error {
	if s.skip > 0 {
		s.skip--
		return nil
	}
	return s.DataStreamWriter.Send(fd)
}
