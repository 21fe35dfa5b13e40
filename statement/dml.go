package statement

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

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
	return e.rewrite(ctx, sess, d)
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
	return e.rewrite(ctx, sess, d)
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
	if d := planner.DryRunOf(ctx); d != nil {
		d.Note("rows", "%d rows of %s match", n, tgt.Ref)
		return 0, true, d.Commit("delete (merge-on-read): positional deletes (v2) or deletion vectors (v3) for files that match in part, removal of files that match whole, in one snapshot")
	}
	err = e.commitChange(ctx, tgt, func(tx *table.Transaction) error {
		return tx.Delete(ctx, expr, nil, table.WithDeleteCaseInsensitive())
	}, nil)
	if err != nil {
		return 0, true, err
	}
	return n, true, nil
}

// rewrite runs a copy-on-write rewrite (rewriteFiles) and commits its
// files in one snapshot: an UPDATE, or a DELETE that is not merge-on-read.
func (e *Executor) rewrite(ctx context.Context, sess planner.Session, d *planner.DML) (int64, error) {
	tgt := d.Target
	rw, err := e.rewriteFiles(ctx, sess, d)
	if err != nil || len(rw.deleted) == 0 {
		return 0, err
	}
	if err := e.keepOrRemove(tgt, e.commitFiles(ctx, tgt, rw.deleted, rw.added), rw.added); err != nil {
		return 0, err
	}
	return rw.affected, nil
}

// rewritten is what a copy-on-write rewrite wrote, not yet committed: the
// data files it replaces, the files replacing them and how many rows the
// statement changed in them.
type rewritten struct {
	deleted, added []iceberg.DataFile
	affected       int64
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
	w := e.NewWrite(tgt)
	w.Rewrite, w.MatchSQL, w.Lineage = true, plan.MatchSQL, plan.Lineage
	res, err := e.runWrite(ctx, tgt, w, plan.Endpoints)
	if err != nil {
		return nil, err
	}
	rw := &rewritten{added: res.Added, affected: res.Affected}
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
// commit that replaces the rewritten files and adds the new ones.
func (e *Executor) merge(ctx context.Context, sess planner.Session, d *planner.DML) (int64, error) {
	tgt := d.Target
	rw := &rewritten{}
	if d.Rewrites() {
		var err error
		if rw, err = e.rewriteFiles(ctx, sess, d); err != nil {
			return 0, err
		}
	}
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
	if err := e.keepOrRemove(tgt, e.commitFiles(ctx, tgt, rw.deleted, added), added); err != nil {
		return 0, err
	}
	return n, nil
}
