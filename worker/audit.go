package worker

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// The audit log of a worker: one line per ticket served (fetch) or write
// fragment and ingest share run (write), with the principal, the client,
// the query id, the rows and bytes sent or written, how long and how it
// ended. Lines of one statement share its query id with the coordinator's.

type entryKey struct{}

// auditEntry returns ctx carrying a fresh entry of a call.
func (s *Server) auditEntry(ctx context.Context) (context.Context, *audit.Entry) {
	e := &audit.Entry{Event: audit.EventFetch, Client: auth.ClientAddr(ctx)}
	if p := auth.FromContext(ctx); p != nil {
		e.Principal, e.Method = p.Name, p.Method
	}
	return context.WithValue(ctx, entryKey{}, e), e
}

// noteTicket records the ticket a call runs.
func noteTicket(ctx context.Context, t *wire.Ticket) {
	if e, ok := ctx.Value(entryKey{}).(*audit.Entry); ok {
		e.QueryID, e.TraceID = t.QueryID, tracing.TraceID(ctx)
		if t.Write != nil {
			e.Event = audit.EventWrite
			e.Written = []audit.TableUse{{Table: t.Write.Display}}
		}
		if e.Principal == "" || e.Principal == auth.ClusterName {
			// The cluster pulling a child or running a write fragment: the
			// line names whom the ticket was planned for.
			e.Principal = t.Principal
		}
	}
}

// noteWritten adds the files a write wrote.
func noteWritten(ctx context.Context, results []wire.WriteResult) {
	if e, ok := ctx.Value(entryKey{}).(*audit.Entry); ok {
		for _, r := range results {
			e.Rows += r.Rows
			e.Bytes += r.Bytes
		}
	}
}

// finish writes the call's line.
func (s *Server) finish(e *audit.Entry, start time.Time, err error) {
	e.Duration = audit.Since(start)
	s.opts.Audit.Write(*e, err)
}

// countingStream counts the rows and bytes of the record batches a DoGet
// sends.
type countingStream struct {
	flight.FlightService_DoGetServer
	e *audit.Entry
}

func (c *countingStream) Send(d *flight.FlightData) error {
	if c.e.Event == audit.EventFetch {
		c.e.Bytes += int64(len(d.DataBody))
		c.e.Rows += batchRows(d.DataHeader)
	}
	return c.FlightService_DoGetServer.Send(d)
}

// Arrow IPC flatbuffer layout (format/Message.fbs): Message's header_type
// and header are its fields 1 and 2, RecordBatch's length its field 0.
const (
	messageHeaderType   = 6 // vtable offset of field 1
	messageHeader       = 8 // vtable offset of field 2
	recordBatchLength   = 4 // vtable offset of field 0
	headerRecordBatch   = 3 // MessageHeader.RecordBatch
	minFlatbufferLength = 8
)

// batchRows is the row count of an IPC message header, 0 unless it is a
// record batch.
func batchRows(header []byte) (n int64) {
	if len(header) < minFlatbufferLength {
		return 0
	}
	defer func() {
		if recover() != nil {
			n = 0 // not a message this reader understands: count nothing
		}
	}()
	msg := flatbuffers.Table{Bytes: header, Pos: flatbuffers.GetUOffsetT(header)}
	o := flatbuffers.UOffsetT(msg.Offset(messageHeaderType))
	if o == 0 || msg.GetByte(o+msg.Pos) != headerRecordBatch {
		return 0
	}
	var rb flatbuffers.Table
	if o = flatbuffers.UOffsetT(msg.Offset(messageHeader)); o == 0 {
		return 0
	}
	msg.Union(&rb, o)
	if o = flatbuffers.UOffsetT(rb.Offset(recordBatchLength)); o == 0 {
		return 0
	}
	return rb.GetInt64(o + rb.Pos)
}
