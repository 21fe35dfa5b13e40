package worker

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membudget"
)

// send streams rdr to the client with exactly schema, the one the
// coordinator planned: each batch keeps its columns, whose types must
// equal the planned ones, under the planned names, nullability and
// metadata. rdr's batches arrive cut to sendOptions (engine.Query,
// engine.Merge), so no message grows past what clients accept (ADBC's
// default is 16 MiB). It returns the rows and batches sent.
// sendOptions shape a result the worker streams to a client: merged
// toward BatchRows rows, within BatchBytes, flushed after FlushAfter.
func (s *Server) sendOptions(ctx context.Context) engine.QueryOptions {
	return engine.QueryOptions{BatchRows: s.opts.BatchRows, BatchBytes: s.opts.BatchBytes,
		FlushAfter: s.opts.FlushAfter, Allocator: alloc(ctx)}
}

func (s *Server) send(ctx context.Context, schema *arrow.Schema, rdr array.RecordReader, stream flight.DataStreamWriter) (rows int64, batches int, err error) {
	mem := alloc(ctx)
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for rdr.Next() {
		if err := ctx.Err(); err != nil {
			return rows, batches, context.Cause(ctx)
		}
		if err := membudget.Check(mem); err != nil {
			return rows, batches, err
		}
		rec := rdr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		if err := checkTypes(schema, rec.Schema()); err != nil {
			return rows, batches, fmt.Errorf("%w: result does not match the planned schema: %v", errInternal, err)
		}
		out := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := w.Write(out)
		out.Release()
		if err != nil {
			return rows, batches, err
		}
		rows += rec.NumRows()
		batches++
	}
	if err := rdr.Err(); err != nil {
		return rows, batches, &queryError{err: err}
	}
	return rows, batches, nil
}
