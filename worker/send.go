package worker

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// send streams rdr to the client with exactly schema, the one the
// coordinator planned: each batch keeps DuckDB's columns, whose types must
// equal the planned ones, under the planned names, nullability and
// metadata. Small chunks are merged toward s.opts.BatchRows rows. It
// returns the rows and batches sent.
func (s *Server) send(ctx context.Context, schema *arrow.Schema, rdr array.RecordReader, stream flight.DataStreamWriter) (rows int64, batches int, err error) {
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.opts.Allocator))
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	write := func(rec arrow.RecordBatch) error {
		defer rec.Release()
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err := w.Write(rec); err != nil {
			return err
		}
		rows += rec.NumRows()
		batches++
		return nil
	}
	m := &merger{schema: schema, mem: s.opts.Allocator}
	defer m.release()
	target := int64(s.opts.BatchRows)
	for rdr.Next() {
		if err := ctx.Err(); err != nil {
			return rows, batches, context.Cause(ctx)
		}
		rec := rdr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		if err := checkTypes(schema, rec.Schema()); err != nil {
			return rows, batches, fmt.Errorf("%w: result does not match the planned schema: %v", errInternal, err)
		}
		if rec.NumRows() >= target {
			if out, err := m.flush(); err != nil {
				return rows, batches, err
			} else if out != nil {
				if err := write(out); err != nil {
					return rows, batches, err
				}
			}
			// Large batches (iceberg-go's, on the passthrough path) go out in
			// zero-copy slices of at most target rows, so no message grows past
			// what clients accept (ADBC's default is 16 MiB).
			whole := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
			for off := int64(0); off < whole.NumRows(); off += target {
				if err := write(whole.NewSlice(off, min(off+target, whole.NumRows()))); err != nil {
					whole.Release()
					return rows, batches, err
				}
			}
			whole.Release()
			continue
		}
		m.add(rec)
		if m.rows >= target {
			out, err := m.flush()
			if err != nil {
				return rows, batches, err
			}
			if err := write(out); err != nil {
				return rows, batches, err
			}
		}
	}
	if err := rdr.Err(); err != nil {
		return rows, batches, &queryError{err: err}
	}
	out, err := m.flush()
	if err != nil {
		return rows, batches, err
	}
	if out != nil {
		if err := write(out); err != nil {
			return rows, batches, err
		}
	}
	return rows, batches, nil
}

// merger gathers small batches and concatenates them into one batch of
// schema.
type merger struct {
	schema  *arrow.Schema
	mem     memory.Allocator
	pending []arrow.RecordBatch
	rows    int64
}

// add keeps rec until the next flush.
func (m *merger) add(rec arrow.RecordBatch) {
	rec.Retain()
	m.pending = append(m.pending, rec)
	m.rows += rec.NumRows()
}

// flush returns the gathered rows as one batch of m.schema, or nil when
// there are none. The caller releases it.
func (m *merger) flush() (arrow.RecordBatch, error) {
	defer m.release()
	switch len(m.pending) {
	case 0:
		return nil, nil
	case 1:
		p := m.pending[0]
		return array.NewRecordBatch(m.schema, p.Columns(), p.NumRows()), nil
	}
	cols := make([]arrow.Array, m.schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	chunks := make([]arrow.Array, len(m.pending))
	for i := range cols {
		for j, p := range m.pending {
			chunks[j] = p.Column(i)
		}
		c, err := array.Concatenate(chunks, m.mem)
		if err != nil {
			return nil, fmt.Errorf("%w: merge result column %q: %v", errInternal, m.schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(m.schema, cols, m.rows), nil
}

// release drops the gathered batches.
func (m *merger) release() {
	for _, p := range m.pending {
		p.Release()
	}
	m.pending, m.rows = nil, 0
}
