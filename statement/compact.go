package statement

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/planner"
)

// Compaction (rewrite_data_files, ALTER TABLE … EXECUTE optimize).
//
// The planner plans it (planner.Planner.PlanCompaction): the table's
// files once, the small ones (and the ones with many deletes) bin-packed
// per partition with iceberg-go's compaction planner, whole groups as
// write fragments (the same fragments INSERT … SELECT runs), which read
// their files with deletes applied, order the rows by the partition
// columns and the sort order and write new files. Here the fragments run
// on the workers, and one commit replaces the rewritten files (and the
// delete files that apply to nothing afterwards) through iceberg-go's
// RewriteFiles, whose validation lets concurrent appends through and
// fails the rewrite if a concurrent commit deleted rows of a rewritten
// file.

// compactResult is what a compaction did.
type compactResult struct {
	rewrittenFiles, addedFiles, removedDeleteFiles int64
	rewrittenBytes, addedBytes                     int64
}

// testHookBeforeRewriteCommit, when set, runs after the workers wrote a
// compaction's (or rewrite_position_delete_files') files and before its
// commit (tests make a concurrent commit there).
var testHookBeforeRewriteCommit func()

// compact runs one compaction of tgt.
func (e *Executor) compact(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, spec planner.CompactSpec) (*compactResult, error) {
	workers := e.opts.Workers.Live()
	if len(workers) == 0 {
		return nil, fmt.Errorf("%w: no worker is serving; check the workers' health", planner.ErrNoWorkers)
	}
	cp, err := e.PlanCompaction(ctx, sess, tgt, spec, workers)
	if err != nil {
		return nil, err
	}
	if cp == nil {
		return &compactResult{}, nil
	}
	res, err := e.runWrite(ctx, tgt, &cp.WritePlan)
	if err != nil {
		return nil, err
	}
	out := &compactResult{addedFiles: int64(len(res.Added)), rewrittenFiles: int64(len(cp.Old)), rewrittenBytes: cp.OldBytes}
	for _, df := range res.Added {
		out.addedBytes += df.FileSizeBytes()
	}
	if testHookBeforeRewriteCommit != nil {
		testHookBeforeRewriteCommit()
	}
	change, removed, err := rewriteFiles(ctx, tgt, cp.Base, cp.Old, cp.Tasks, res.Added)
	if err == nil {
		err = e.finish(ctx, tgt, change, res.Added)
	} else {
		err = e.keepOrRemove(tgt, err, res.Added)
	}
	if err != nil {
		return nil, err
	}
	out.removedDeleteFiles = removed
	return out, nil
}

// rewriteFiles is the commit of one rewrite snapshot (compaction's
// finish): old replaced by added, with
// the delete files that apply to nothing afterwards removed (position
// deletes of rewritten files only, their deletion vectors, equality
// deletes no surviving file can see). tasks are the rewritten files'
// tasks as planned from snapshot base. It returns how many delete files
// the commit removes.
//
// The rewrite was planned from snapshot base. A concurrent commit that
// removed a rewritten file, or added deletes that may apply to one,
// conflicts with it (Iceberg's rewrite validation); one that removes
// delete files conflicts with any concurrent commit but an append (which
// cannot touch the rewritten files nor make a removed delete apply
// again). Otherwise the same rewrite is built again on the table as it
// then is.
func rewriteFiles(ctx context.Context, tgt *planner.WriteTarget, base int64, old []iceberg.DataFile, tasks []table.FileScanTask, added []iceberg.DataFile) (commit.Request, int64, error) {
	tbl := tgt.Pinned.Table
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return commit.Request{}, 0, err
	}
	rewritten := map[string]struct{}{}
	for _, df := range old {
		rewritten[df.FilePath()] = struct{}{}
	}
	snap := tbl.SnapshotByID(base)
	deadPos, err := table.CollectDeadPositionDeletes(ctx, fsys, snap, rewritten)
	if err != nil {
		return commit.Request{}, 0, fmt.Errorf("delete files of %s: %w", tgt.Ref, err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fsys, tbl.Metadata(), snap, rewritten)
	if err != nil {
		return commit.Request{}, 0, fmt.Errorf("delete files of %s: %w", tgt.Ref, err)
	}
	gr := table.CompactionGroupResult{OldDataFiles: old, NewDataFiles: added,
		SafePosDeletes: deadPos, SafeDeletionVectors: table.CollectSafeDeletionVectors(tasks)}
	removed := len(deadPos) + len(gr.SafeDeletionVectors) + len(deadEq)
	scope := &commit.Scope{Op: commit.OpRewrite, Base: base, Rewritten: old, AppendsOnly: removed > 0}
	return commit.Request{Scope: scope, Tx: func(tx *table.Transaction, _ table.Metadata) error {
		rw := tx.NewRewrite(nil).ApplyResult(gr)
		for _, df := range deadEq {
			rw.DeleteFile(df)
		}
		return rw.Commit(ctx)
	}}, int64(removed), nil
}
