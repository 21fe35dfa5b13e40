package exchange

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// Split cuts rec into n batches of its columns but the last, batch j
// holding the rows whose last column (the partition, an unsigned integer
// below n: DuckDB's hash(keys) % n) is j, in their order; nil where a
// partition has no row. The batches have schema's fields (rec's but the
// last). rec stays the caller's; the batches are the caller's to release.
// Columns are copied with arrow's Take through ctx's allocator
// (compute.WithAllocator), but for a batch whose rows all fall in one
// partition, which keeps rec's columns.
func Split(ctx context.Context, rec arrow.RecordBatch, n int, schema *arrow.Schema) ([]arrow.RecordBatch, error) {
	last := int(rec.NumCols()) - 1
	if last < 0 || schema.NumFields() != last {
		return nil, fmt.Errorf("exchange: split a batch of %d columns into %d", rec.NumCols(), schema.NumFields())
	}
	parts, err := partitionOf(rec.Column(last), n)
	if err != nil {
		return nil, err
	}
	counts := make([]int, n)
	for _, p := range parts {
		counts[p]++
	}
	out := make([]arrow.RecordBatch, n)
	values := array.NewRecordBatch(schema, rec.Columns()[:last], rec.NumRows())
	defer values.Release()
	for j, c := range counts {
		if c == int(rec.NumRows()) && c > 0 {
			values.Retain()
			out[j] = values
			return out, nil
		}
	}
	mem := compute.GetAllocator(ctx)
	idx := make([]*array.Int32Builder, n)
	for j, c := range counts {
		if c > 0 {
			idx[j] = array.NewInt32Builder(mem)
			idx[j].Reserve(c)
		}
	}
	for r, p := range parts {
		idx[p].UnsafeAppend(int32(r))
	}
	release := func() {
		for _, b := range out {
			if b != nil {
				b.Release()
			}
		}
	}
	for j, b := range idx {
		if b == nil {
			continue
		}
		indices := b.NewArray()
		b.Release()
		taken, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(values), compute.NewDatumWithoutOwning(indices))
		indices.Release()
		if err != nil {
			for _, b := range idx[j+1:] {
				if b != nil {
					b.Release()
				}
			}
			release()
			return nil, fmt.Errorf("exchange: split: %w", err)
		}
		out[j] = taken.(*compute.RecordDatum).Value
	}
	return out, nil
}

// partitionOf reads the partition of every row from col.
func partitionOf(col arrow.Array, n int) ([]int32, error) {
	out := make([]int32, col.Len())
	if col.NullN() > 0 {
		return nil, errors.New("exchange: a row without a partition")
	}
	set := func(r int, v uint64) error {
		if v >= uint64(n) {
			return fmt.Errorf("exchange: partition %d of %d", v, n)
		}
		out[r] = int32(v)
		return nil
	}
	switch a := col.(type) {
	case *array.Uint64:
		for r, v := range a.Uint64Values() {
			if err := set(r, v); err != nil {
				return nil, err
			}
		}
	case *array.Uint32:
		for r, v := range a.Uint32Values() {
			if err := set(r, uint64(v)); err != nil {
				return nil, err
			}
		}
	case *array.Uint16:
		for r, v := range a.Uint16Values() {
			if err := set(r, uint64(v)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("exchange: partition column of type %s", col.DataType())
	}
	return out, nil
}
