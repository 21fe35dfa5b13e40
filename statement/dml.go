package statement

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/icemeta"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// UPDATE, DELETE and MERGE: the planner reads them, loads their target
// and prints their statements (planner.Planner.PlanDML) and plans the
// copy-on-write rewrite of the target's files (PlanRewrite) or the exact
// filter of a merge-on-read delete (ExactFilter); they run here. A
// rewrite's fragments run on the workers and their files are committed in
// one snapshot that replaces the rewritten files.

func init() {
	runsPerRow(parse.KindUpdate, (*Executor).dml)
	runsPerRow(parse.KindDelete, (*Executor).dml)
	runsPerRow(parse.KindMerge, (*Executor).dml)
}

// dml runs an UPDATE, DELETE or MERGE with one set of parameter values
// (args; MERGE takes none).
func (e *Executor) dml(ctx context.Context, sess planner.Session, st *parse.Statement, args []any) (int64, error) {
	d, err := e.PlanDML(ctx, sess, st, args)
	if err != nil {
		return 0, err
	}
	switch st.Kind {
	case parse.KindDelete:
		return e.delete(ctx, sess, d, args)
	case parse.KindMerge:
		return e.merge(ctx, sess, d)
	}
	return e.rewrite(ctx, sess, d, commit.OpUpdate)
}

// delete runs DELETE FROM name [WHERE pred]: on a merge-on-read table
// whose WHERE clause converts exactly to an Iceberg filter as equality
// deletes (deleteEquality) or iceberg-go's own delete
// (deleteMergeOnRead), else copy-on-write: every data file with a
// matching row is rewritten without those rows (a file whose rows all
// match is dropped without a replacement), in one commit. args bind the
// WHERE clause's parameters.
func (e *Executor) delete(ctx context.Context, sess planner.Session, d *planner.DML, args []any) (int64, error) {
	tgt := d.Target
	md := tgt.Pinned.Table.Metadata()
	if d.Where && md.Version() >= 2 && md.Properties().Get(table.WriteDeleteModeKey, "") == table.WriteModeMergeOnRead {
		if n, ok, err := e.deleteEquality(ctx, sess, tgt, d.Match, args); ok || err != nil {
			return n, err
		}
		n, ok, err := e.deleteMergeOnRead(ctx, sess, tgt, d.Match, args)
		if ok || err != nil {
			return n, err
		}
	}
	return e.rewrite(ctx, sess, d, commit.OpDelete)
}

// deleteMergeOnRead runs a DELETE on a table whose write.delete.mode is
// merge-on-read with iceberg-go's own delete: positional delete files (v2)
// or deletion vectors (v3) for partly matching files, whole-file removal
// for files that match entirely. It applies only when the WHERE clause
// converts exactly to an Iceberg filter; ok is false otherwise and the
// caller rewrites the files instead. The matching rows are counted on the
// coordinator with the same filter.
func (e *Executor) deleteMergeOnRead(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, match *parse.Statement, args []any) (n int64, ok bool, err error) {
	pinned, expr, exact, err := e.ExactFilter(ctx, sess, tgt, match, args)
	if err != nil || !exact {
		return 0, false, err
	}
	if tgt.Branch == "" {
		tgt.Pinned = pinned // commit against the version read
	}
	tbl := pinned.Table
	if tbl.CurrentSnapshot() == nil {
		return 0, true, nil
	}
	first := tbl.Schema().Fields()[0].Name
	// A count that iceberg-go cannot make (e.g. metrics of files written
	// before a type widening) sends the DELETE to copy-on-write.
	_, recs, err := tbl.Scan(table.WithRowFilter(expr), table.WithSelectedFields(first)).ToArrowRecords(ctx)
	if err != nil {
		return 0, false, nil
	}
	for rec, err := range recs {
		if err != nil {
			return 0, false, nil
		}
		n += rec.NumRows()
		rec.Release()
	}
	if n == 0 {
		return 0, true, nil
	}
	if mixed, err := mixesPartitions(ctx, tbl, expr); err != nil || mixed {
		return 0, false, nil
	}
	if d := planner.DryRunOf(ctx); d != nil {
		d.Note("rows", "%d rows of %s match", n, tgt.Ref)
		return 0, true, d.Commit("delete (merge-on-read): positional deletes (v2) or deletion vectors (v3) for files that match in part, removal of files that match whole, in one snapshot")
	}
	// The delete is made again on the table each attempt loads (which
	// finds the matching rows anew); the scope makes a concurrently added
	// file with a matching row conflict under serializable isolation.
	err = e.commitTx(ctx, tgt, commit.Request{Scope: readScope(tgt, commit.OpDelete, expr, nil), OwnFiles: true,
		Tx: func(tx *table.Transaction, _ table.Metadata) error {
			return tx.Delete(ctx, expr, nil, table.WithDeleteCaseInsensitive())
		}})
	if err != nil {
		return 0, true, err
	}
	return n, true, nil
}

// mixesPartitions reports whether iceberg-go's delete of the rows expr
// matches would write the position deletes of two partitions into one
// file (icemeta.PartitionPathsCollide): the DELETE then rewrites the
// files instead.
func mixesPartitions(ctx context.Context, tbl *table.Table, expr iceberg.BooleanExpression) (bool, error) {
	if !icemeta.MayCollide(tbl.Metadata()) {
		return false, nil
	}
	tasks, err := tbl.Scan(table.WithRowFilter(expr)).PlanFiles(ctx)
	if err != nil {
		return false, err
	}
	files := make([]iceberg.DataFile, len(tasks))
	for i, task := range tasks {
		files[i] = task.File
	}
	return icemeta.PartitionPathsCollide(tbl.Metadata(), files), nil
}

// rewrite runs a copy-on-write rewrite (rewriteFiles) and commits its
// files in one snapshot: an UPDATE, or a DELETE that is not merge-on-read
// (op says which). The commit conflicts with concurrent commits as its
// scope says: what the statement's WHERE clause may match and the files
// it rewrote.
func (e *Executor) rewrite(ctx context.Context, sess planner.Session, d *planner.DML, op commit.Op) (int64, error) {
	tgt := d.Target
	rw, err := e.rewriteFiles(ctx, sess, d)
	if err != nil || len(rw.deleted) == 0 {
		return 0, err
	}
	scope := readScope(tgt, op, rw.filter, rw.deleted)
	if err := e.finish(ctx, tgt, rowDelta(ctx, scope, rw.deleted, rw.added), rw.added); err != nil {
		return 0, err
	}
	return rw.affected, nil
}

// rewritten is what a copy-on-write rewrite wrote, not yet committed: the
// data files it replaces, the files replacing them, how many rows the
// statement changed in them and the rows it may have changed (nil: any).
type rewritten struct {
	deleted, added []iceberg.DataFile
	affected       int64
	filter         iceberg.BooleanExpression
}

// rewriteFiles runs the fragments of d's copy-on-write rewrite
// (planner.Planner.PlanRewrite): each worker rewrites the files of its
// endpoint that have a match and reports them replaced. Nothing is
// committed; on failure the files written are deleted.
func (e *Executor) rewriteFiles(ctx context.Context, sess planner.Session, d *planner.DML) (*rewritten, error) {
	tgt := d.Target
	plan, err := e.PlanRewrite(ctx, sess, d)
	if err != nil || plan == nil {
		return &rewritten{}, err
	}
	w := plan.Write
	res, err := e.runWrite(ctx, tgt, &plan.WritePlan)
	if err != nil {
		return nil, err
	}
	rw := &rewritten{added: res.Added, affected: res.Affected, filter: plan.Filter}
	for path := range res.Replaced {
		f, ok := plan.Files[path]
		if !ok {
			e.removeFiles(ctx, tgt, w.WriteUUID, res.Added)
			return nil, fmt.Errorf("%w: a worker replaced %s, which was not planned", planner.ErrWriteFailed, path)
		}
		rw.deleted = append(rw.deleted, f)
	}
	return rw, nil
}

// merge runs a MERGE (the grammar and its rules are in planner/merge.go)
// as one copy-on-write statement: the rewrite of the target's files, the
// INSERT … SELECT of the source rows no target row matches, and one
// commit that replaces the rewritten files and adds the new ones. Its
// conflict filter is the target rows whose join key is one of the
// source's (mergeFilter).
func (e *Executor) merge(ctx context.Context, sess planner.Session, d *planner.DML) (int64, error) {
	tgt := d.Target
	rw := &rewritten{}
	if d.Rewrites() {
		var err error
		if rw, err = e.rewriteFiles(ctx, sess, d); err != nil {
			return 0, err
		}
	}
	// What the statement read of the target: the rewrite's version, or
	// the one it loaded (the insert reads a version no older).
	scope := readScope(tgt, commit.OpMerge, nil, rw.deleted)
	added, n := rw.added, rw.affected
	if d.Insert != nil {
		res, err := e.writeSelect(ctx, sess, tgt, nil, d.Insert)
		if err != nil {
			e.removeOnly(tgt, rw.added)
			return 0, err
		}
		added, n = append(added, res.Added...), n+res.Rows
	}
	if len(rw.deleted) == 0 && len(added) == 0 {
		return 0, nil
	}
	scope.Filter = e.mergeFilter(ctx, sess, tgt, d.Keys)
	if err := e.finish(ctx, tgt, rowDelta(ctx, scope, rw.deleted, added), added); err != nil {
		return 0, err
	}
	return n, nil
}

// mergeFilter is the conflict filter of a MERGE: its target column IN
// the source's key values (between their least and greatest when there
// are more than planner.MaxMergeKeys), nil (every row) when its ON
// clause names no key, the key's type has no such filter, the source
// cannot be read for it, or the table's isolation is snapshot (which
// does not use it).
func (e *Executor) mergeFilter(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, keys *planner.MergeKeys) iceberg.BooleanExpression {
	if keys == nil || planner.DryRunOf(ctx) != nil {
		return nil
	}
	if level, err := commit.IsolationOf(tgt.Pinned.Table.Properties(), commit.OpMerge); err != nil || level != commit.Serializable {
		return nil
	}
	field, ok := tgt.Pinned.Table.Schema().FindFieldByName(keys.Column)
	if !ok {
		return nil
	}
	ref := iceberg.Reference(field.Name)
	vals, err := e.queryLiterals(ctx, sess, keys.Values, field.Type)
	if err != nil {
		return nil
	}
	if len(vals) <= planner.MaxMergeKeys {
		if len(vals) == 0 {
			return iceberg.AlwaysFalse{}
		}
		return iceberg.SetPredicate(iceberg.OpIn, ref, vals)
	}
	bounds, err := e.queryLiterals(ctx, sess, keys.Range, field.Type)
	if err != nil || len(bounds) != 2 {
		return nil
	}
	return iceberg.NewAnd(iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, bounds[0]), iceberg.LiteralPredicate(iceberg.OpLTEQ, ref, bounds[1]))
}

// queryLiterals runs query, planned like any SELECT, and returns every
// value of its columns, row by row, as literals of typ; a null or a type
// it cannot convert fails it.
func (e *Executor) queryLiterals(ctx context.Context, sess planner.Session, query *parse.Statement, typ iceberg.Type) ([]iceberg.Literal, error) {
	plan, err := e.Planner.Plan(ctx, sess, query)
	if err != nil {
		return nil, err
	}
	var out []iceberg.Literal
	o := flightclient.PullOptions{OnUnavailable: e.Unreachable}
	for _, ep := range plan.Endpoints {
		err := e.opts.Flight.Pull(ctx, ep.Locations, ep.Ticket, o, func(rec arrow.RecordBatch) error {
			defer rec.Release()
			for r := 0; r < int(rec.NumRows()); r++ {
				for c := 0; c < int(rec.NumCols()); c++ {
					lit, err := arrowLiteral(rec.Column(c), r, typ)
					if err != nil {
						return err
					}
					out = append(out, lit)
				}
			}
			if len(out) > 2*planner.MaxMergeKeys+2 {
				return fmt.Errorf("more values than planned")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// arrowLiteral is row r of col as a literal of typ, for the types a key
// filter takes.
func arrowLiteral(col arrow.Array, r int, typ iceberg.Type) (iceberg.Literal, error) {
	if col.IsNull(r) {
		return nil, fmt.Errorf("a null key")
	}
	var lit iceberg.Literal
	switch a := col.(type) {
	case *array.Int32:
		lit = iceberg.NewLiteral(a.Value(r))
	case *array.Int64:
		lit = iceberg.NewLiteral(a.Value(r))
	case *array.String:
		lit = iceberg.NewLiteral(a.Value(r))
	case *array.LargeString:
		lit = iceberg.NewLiteral(a.Value(r))
	case *array.StringView:
		lit = iceberg.NewLiteral(a.Value(r))
	case *array.Date32:
		lit = iceberg.NewLiteral(iceberg.Date(a.Value(r)))
	case *array.Timestamp:
		if a.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return nil, fmt.Errorf("key of type %s", col.DataType())
		}
		lit = iceberg.NewLiteral(iceberg.Timestamp(a.Value(r)))
	default:
		return nil, fmt.Errorf("key of type %s", col.DataType())
	}
	if !lit.Type().Equals(typ) {
		return lit.To(typ)
	}
	return lit, nil
}
