package engine

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
)

// merger cuts a stream of batches into batches of exactly target rows
// (the last one, or one flushed early, may be shorter), or fewer where
// those rows would pass maxBytes: small batches are concatenated, large
// ones sliced without copying. With target 0 it only gathers until flush.
type merger struct {
	schema   *arrow.Schema
	mem      memory.Allocator
	target   int64
	maxBytes int64 // 0: no limit
	pending  []arrow.RecordBatch
	rows     int64
	bytes    int64 // of the pending rows, estimated from their batches
	// ready are complete batches not yet handed out.
	ready []arrow.RecordBatch
	err   error
}

// add takes the rows of rec (the caller keeps its own reference).
func (m *merger) add(rec arrow.RecordBatch) {
	if rec.NumRows() == 0 {
		return
	}
	perRow := max(util.TotalRecordSize(rec)/rec.NumRows(), 1)
	for off := int64(0); off < rec.NumRows() && m.err == nil; {
		n := rec.NumRows() - off
		if m.target > 0 {
			n = min(n, m.target-m.rows)
		}
		if m.maxBytes > 0 {
			n = min(n, max((m.maxBytes-m.bytes)/perRow, 1))
		}
		m.pending = append(m.pending, rec.NewSlice(off, off+n))
		m.rows += n
		m.bytes += n * perRow
		off += n
		if m.target > 0 && m.rows >= m.target || m.maxBytes > 0 && m.bytes+perRow > m.maxBytes {
			out, err := m.flush()
			if err != nil {
				m.err = err
				return
			}
			m.ready = append(m.ready, out)
		}
	}
}

func newMerger(schema *arrow.Schema, o QueryOptions) *merger {
	return &merger{schema: schema, mem: o.Allocator, target: int64(max(o.BatchRows, 0)), maxBytes: max(o.BatchBytes, 0)}
}

// pop hands out the oldest complete batch, if any; the caller releases it.
func (m *merger) pop() (arrow.RecordBatch, bool) {
	if len(m.ready) == 0 {
		return nil, false
	}
	out := m.ready[0]
	m.ready = m.ready[1:]
	return out, true
}

// flush returns the pending rows as one batch of m.schema, or nil when
// there are none. The caller releases it.
func (m *merger) flush() (arrow.RecordBatch, error) {
	defer m.releasePending()
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
			return nil, fmt.Errorf("engine: merge result column %q: %w", m.schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(m.schema, cols, m.rows), nil
}

func (m *merger) releasePending() {
	for _, p := range m.pending {
		p.Release()
	}
	m.pending, m.rows, m.bytes = nil, 0, 0
}

// release drops everything the merger holds.
func (m *merger) release() {
	m.releasePending()
	for _, r := range m.ready {
		r.Release()
	}
	m.ready = nil
}

// Merge returns a reader of src's rows in batches of exactly o.BatchRows
// rows (but the last, and fewer where they would pass o.BatchBytes), in
// src's schema: small batches are concatenated, large ones sliced. It
// reads src on the caller's goroutine: o.FlushAfter does not apply. The
// returned reader releases src.
func Merge(src array.RecordReader, o QueryOptions) array.RecordReader {
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	r := &mergeReader{src: src, m: newMerger(src.Schema(), o)}
	r.refs = 1
	return r
}

type mergeReader struct {
	refs int64
	src  array.RecordReader
	m    *merger
	cur  arrow.RecordBatch
	err  error
}

func (r *mergeReader) Schema() *arrow.Schema          { return r.src.Schema() }
func (r *mergeReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *mergeReader) Record() arrow.RecordBatch      { return r.cur }
func (r *mergeReader) Err() error                     { return r.err }
func (r *mergeReader) Retain()                        { r.refs++ }

func (r *mergeReader) Release() {
	if r.refs--; r.refs != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.m.release()
	r.src.Release()
}

func (r *mergeReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for {
		if out, ok := r.m.pop(); ok {
			r.cur = out
			return true
		}
		if r.err = r.m.err; r.err != nil {
			return false
		}
		if !r.src.Next() {
			break
		}
		r.m.add(r.src.RecordBatch())
	}
	if r.err = r.src.Err(); r.err != nil {
		return false
	}
	out, err := r.m.flush()
	r.cur, r.err = out, err
	return out != nil
}
