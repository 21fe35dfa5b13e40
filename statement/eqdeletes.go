package statement

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// Equality deletes written by DELETE, keyed on the table's identifier
// fields (set by Spark's ALTER TABLE … SET|DROP IDENTIFIER FIELDS, which
// this package runs).

// DeleteKindKey is the table property that asks DELETE for equality
// deletes ('equality') instead of positional ones, on a merge-on-read
// table with identifier fields.
const DeleteKindKey = "icefloe.delete-kind"

// deleteEquality runs a DELETE as equality deletes on the identifier
// fields when the table asks for them (DeleteKindKey) and the WHERE
// clause converts exactly to an Iceberg filter: the coordinator reads the
// keys (and partition columns) of the matching rows with iceberg-go and
// writes them with iceberg-go's equality delete writer, in one row-delta
// commit. An equality delete removes every older row with a deleted key,
// so it is used only when the keys select exactly the matching rows (no
// other row shares one of them); ok is false otherwise, and the caller
// deletes another way. args bind the WHERE clause's parameters.
func (e *Executor) deleteEquality(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, match *parse.Statement, args []any) (n int64, ok bool, err error) {
	tbl := tgt.Pinned.Table
	if tbl.Properties().Get(DeleteKindKey, "") != "equality" {
		return 0, false, nil
	}
	keyIDs := tbl.Schema().IdentifierFieldIDs
	if len(keyIDs) == 0 {
		return 0, false, fmt.Errorf("%w: %s asks for equality deletes ('%s' = 'equality') but has no identifier fields (ALTER TABLE … SET IDENTIFIER FIELDS)", planner.ErrInvalid, tgt.Ref, DeleteKindKey)
	}
	pinned, expr, exact, err := e.planner.ExactFilter(ctx, sess, tgt, match, args)
	if err != nil || !exact {
		return 0, false, err
	}
	if tgt.Branch == "" {
		tgt.Pinned = pinned
	}
	read := pinned.Table
	if read.CurrentSnapshot() == nil {
		return 0, true, nil
	}
	keys, cols, ok := equalityColumns(read, keyIDs)
	if !ok {
		return 0, false, nil
	}
	recs, n, err := scanRecords(ctx, read, expr, cols)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if err != nil || n == 0 {
		return 0, err == nil, nil
	}
	unique, deleted, err := keysSelectOnly(ctx, read, recs, keys, n)
	if err != nil || !unique {
		return 0, false, nil
	}
	// iceberg-go's writer would put the deletes of the NULL partition and
	// of one whose path is also "null" in one file (icemeta.RowsNeedLanes).
	if mixed, err := icemeta.RowsNeedLanes(tbl, recs); err != nil || mixed {
		return 0, false, nil
	}
	if d := planner.DryRunOf(ctx); d != nil {
		d.Note("rows", "%d rows of %s match", n, tgt.Ref)
		return 0, true, d.Commit("row delta: the coordinator writes equality deletes on the identifier fields, in one snapshot")
	}
	// An equality delete removes every older row with a deleted key,
	// whatever the isolation level: a concurrently added file that may
	// hold one of the keys conflicts (Keys), and under serializable
	// isolation one that may hold a matching row (Filter).
	scope := readScope(tgt, commit.OpDelete, expr, nil)
	scope.Keys = deleted
	// The delete files are written once, from the version read; each
	// commit attempt adds them.
	files, err := read.NewTransaction().WriteEqualityDeletes(ctx, keyIDs, func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	})
	if err != nil {
		e.removeOnly(tgt, files)
		return 0, true, err
	}
	err = e.commitTx(ctx, tgt, commit.Request{Scope: scope, Tx: func(tx *table.Transaction, _ table.Metadata) error {
		return tx.NewRowDelta(nil).AddDeletes(files...).Commit(ctx)
	}})
	if err := e.keepOrRemove(tgt, err, files); err != nil {
		return 0, true, err
	}
	return n, true, nil
}

// equalityColumns are the names of the key columns and of the columns an
// equality delete file of tbl holds (keys, then partition source
// columns), when every key is a top-level int, long or string.
func equalityColumns(tbl *table.Table, keyIDs []int) (keys, cols []string, ok bool) {
	schema := tbl.Schema()
	for _, id := range keyIDs {
		f, found := schema.FindFieldByID(id)
		name, _ := schema.FindColumnName(id)
		if !found || strings.Contains(name, ".") {
			return nil, nil, false
		}
		switch f.Type.(type) {
		case iceberg.Int32Type, iceberg.Int64Type, iceberg.StringType:
		default:
			return nil, nil, false
		}
		keys = append(keys, name)
	}
	cols = slices.Clone(keys)
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		if name, ok := schema.FindColumnName(pf.SourceID()); ok && !slices.Contains(cols, name) {
			cols = append(cols, name)
		}
	}
	return keys, cols, true
}

// scanRecords reads cols of the rows of tbl that match expr; the caller
// releases the batches.
func scanRecords(ctx context.Context, tbl *table.Table, expr iceberg.BooleanExpression, cols []string) ([]arrow.RecordBatch, int64, error) {
	_, it, err := tbl.Scan(table.WithRowFilter(expr), table.WithSelectedFields(cols...)).ToArrowRecords(ctx)
	if err != nil {
		return nil, 0, err
	}
	var out []arrow.RecordBatch
	var n int64
	for rec, err := range it {
		if err != nil {
			return out, 0, err
		}
		out = append(out, rec)
		n += rec.NumRows()
	}
	return out, n, nil
}

// keysSelectOnly reports whether the rows of tbl whose keys are among the
// keys in recs are exactly the n rows recs came from; filter selects the
// rows with those keys.
func keysSelectOnly(ctx context.Context, tbl *table.Table, recs []arrow.RecordBatch, keys []string, n int64) (unique bool, filter iceberg.BooleanExpression, err error) {
	tuples := map[string]bool{}
	vals := make([][]any, len(keys))
	for tup := range keyTuples(recs, keys) {
		k := fmt.Sprint(tup...)
		if tuples[k] {
			return false, nil, nil // two matching rows share a key
		}
		tuples[k] = true
		for i, v := range tup {
			vals[i] = append(vals[i], v)
		}
	}
	filter = iceberg.AlwaysTrue{}
	for i, name := range keys {
		filter = iceberg.NewAnd(filter, inFilter(name, vals[i]))
	}
	all, _, err := scanRecords(ctx, tbl, filter, keys)
	defer func() {
		for _, r := range all {
			r.Release()
		}
	}()
	if err != nil {
		return false, nil, err
	}
	var hits int64
	for tup := range keyTuples(all, keys) {
		if tuples[fmt.Sprint(tup...)] {
			hits++
		}
	}
	return hits == n, filter, nil
}

// keyTuples yields the key values of every row of recs.
func keyTuples(recs []arrow.RecordBatch, keys []string) iter.Seq[[]any] {
	return func(yield func([]any) bool) {
		for _, rec := range recs {
			cols := make([]arrow.Array, len(keys))
			for i, k := range keys {
				cols[i] = rec.Column(rec.Schema().FieldIndices(k)[0])
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				tup := make([]any, len(keys))
				for i, c := range cols {
					switch a := c.(type) {
					case *array.Int32:
						tup[i] = a.Value(r)
					case *array.Int64:
						tup[i] = a.Value(r)
					case *array.String:
						tup[i] = a.Value(r)
					case *array.LargeString:
						tup[i] = a.Value(r)
					}
				}
				if !yield(tup) {
					return
				}
			}
		}
	}
}

// inFilter is name IN (vals), for the key types equalityColumns allows.
func inFilter(name string, vals []any) iceberg.BooleanExpression {
	ref := iceberg.Reference(name)
	switch vals[0].(type) {
	case int32:
		return iceberg.IsIn(ref, typed[int32](vals)...)
	case int64:
		return iceberg.IsIn(ref, typed[int64](vals)...)
	default:
		return iceberg.IsIn(ref, typed[string](vals)...)
	}
}

func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}
