package worker

import (
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// readColumns is what a scan reads: wide when catalog.WidenForFiles had to
// add columns so every file has one, else the planned columns.
func readColumns(planned, wide []string) []string {
	if wide != nil {
		return wide
	}
	return planned
}

// dropWidened keeps only want's columns (by name) of each batch of seq,
// removing the columns WidenForFiles added.
func dropWidened(seq iter.Seq2[arrow.RecordBatch, error], want *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			out, perr := keepColumns(rec, want)
			rec.Release()
			if !yield(out, perr) || perr != nil {
				return
			}
		}
	}
}

func keepColumns(rec arrow.RecordBatch, want *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, want.NumFields())
	fields := make([]arrow.Field, want.NumFields())
	for i, f := range want.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: widened scan lacks column %q", errInternal, f.Name)
		}
		cols[i] = rec.Column(idx[0])
		fields[i] = rec.Schema().Field(idx[0])
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}
