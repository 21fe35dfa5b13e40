package statement

import (
	"context"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/planner"
)

// The write protocol. Every statement that writes data files — INSERT
// (… SELECT and … VALUES), CREATE TABLE … AS, CREATE OR REPLACE TABLE,
// MERGE, copy-on-write UPDATE and DELETE, compaction and bulk ingest —
// goes the same three steps, as Trino's connectors do
// (beginInsert → page sinks return fragments → finishInsert):
//
//  1. begin: the target, pinned at the snapshot the write reads
//     (planner.WriteTarget), and the write's plan: its sink over its
//     input (planner.WritePlan, printed by EXPLAIN), one ticket per
//     fragment, each sealed by the planner with the statement's write
//     spec (planner.Planner.PlanWrite, PlanRewrite, PlanCompaction,
//     PlanIngest for ingest).
//  2. fragments: the workers run the fragments and return the files they
//     wrote (runWrite; ingest streams the client's rows into its
//     fragments, ingest.go; INSERT … VALUES writes its one fragment on
//     the coordinator). A fragment that fails deletes the statement's
//     files and fails it; nothing was committed.
//  3. finish: one commit of those files through commit.Run (finish),
//     with its one retry policy, its conflict check against what the
//     statement read (commit.Scope) and the partition statistics of the
//     new snapshot in the same commit. A commit that fails for good
//     deletes the files; one whose outcome is unknown keeps them.
//
// The uses differ only in what their commit does with the files:
// appendFiles (INSERT, CTAS, ingest), rowDelta (copy-on-write UPDATE,
// DELETE and MERGE), replaceTable (CREATE OR REPLACE, ingest's replace
// mode) and compaction's rewrite (compact.go).

// finish is the last step of the write protocol: one commit of change
// (a commit.Request's Tx or Meta, its Scope, Append, Pinned and
// OwnFiles) to the target through commit.Run (commitTx). files are the
// data files the statement wrote: counted in the audit log once
// committed, deleted when the commit failed for good, kept when its
// outcome is unknown.
func (e *Executor) finish(ctx context.Context, tgt *planner.WriteTarget, change commit.Request, files []iceberg.DataFile) error {
	err := e.commitTx(ctx, tgt, change)
	if err == nil {
		audit.From(ctx).AddBytes(fileBytes(files))
	}
	return e.keepOrRemove(tgt, err, files)
}

// appendFiles is the commit of an append: added in one snapshot. Each
// attempt builds the snapshot on the table as it then is (commit.Run),
// so on a v3 table each added file gets its first_row_id from the table
// the attempt starts from (see rowids.go).
func appendFiles(ctx context.Context, added []iceberg.DataFile) commit.Request {
	return commit.Request{Append: true, Tx: func(tx *table.Transaction, base table.Metadata) error {
		files, err := withFirstRowIDs(base, added)
		if err != nil {
			return err
		}
		// Workers name every file they write anew (the statement's write
		// UUID), so none can be in the table yet: skip iceberg-go's
		// duplicate check, which reads every manifest of the table and
		// made each append cost O(snapshots).
		return tx.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck())
	}}
}

// rowDelta is the commit of a copy-on-write rewrite: deleted, the files
// the fragments rewrote, replaced by added, under scope (what the
// statement read to choose them). With nothing deleted it is an append.
func rowDelta(ctx context.Context, scope *commit.Scope, deleted, added []iceberg.DataFile) commit.Request {
	if len(deleted) == 0 {
		r := appendFiles(ctx, added)
		r.Scope = scope
		return r
	}
	return commit.Request{Scope: scope, Tx: func(tx *table.Transaction, base table.Metadata) error {
		files, err := withFirstRowIDs(base, added)
		if err != nil {
			return err
		}
		return tx.ReplaceDataFilesWithDataFiles(ctx, deleted, files, nil)
	}}
}

// replaceTable is the commit of added in place of every live file of
// the target's current snapshot, in one snapshot, props (may be nil) set
// in the same commit.
//
// Concurrency: each attempt lists the files to remove from the table it
// is built on and asserts (AssertRefSnapshotID) that main still points at
// that snapshot, so a concurrent commit (an append included: its rows
// must not survive the replace) makes the attempt lose its race and the
// next one list the files again. If every attempt loses, or the table was
// dropped or replaced meanwhile, nothing is committed and the new files
// are deleted; the old table is untouched.
func replaceTable(ctx context.Context, tgt *planner.WriteTarget, added []iceberg.DataFile, props iceberg.Properties) commit.Request {
	return commit.Request{Tx: func(tx *table.Transaction, base table.Metadata) error {
		if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
			return err
		}
		if len(props) > 0 {
			if err := tx.SetProperties(props); err != nil {
				return err
			}
		}
		fsys, err := tgt.Pinned.Table.FS(ctx) // the table the attempt loaded
		if err != nil {
			return err
		}
		data, deletes, err := liveFiles(base, fsys)
		if err != nil {
			return err
		}
		files, err := withFirstRowIDs(base, added)
		if err != nil {
			return err
		}
		if len(data) == 0 && len(deletes) == 0 && len(files) == 0 {
			return nil
		}
		return tx.ReplaceFiles(ctx, data, files, deletes, nil)
	}}
}

// finishAppend finishes an append of res: its rows, once committed.
func (e *Executor) finishAppend(ctx context.Context, tgt *planner.WriteTarget, res *writeResults) (int64, error) {
	if len(res.Added) == 0 {
		return 0, nil
	}
	if err := e.finish(ctx, tgt, appendFiles(ctx, res.Added), res.Added); err != nil {
		return 0, err
	}
	return res.Rows, nil
}

// finishReplace finishes a replace of the target's rows by res's: its
// rows, once committed.
func (e *Executor) finishReplace(ctx context.Context, tgt *planner.WriteTarget, res *writeResults, props iceberg.Properties) (int64, error) {
	if err := e.finish(ctx, tgt, replaceTable(ctx, tgt, res.Added, props), res.Added); err != nil {
		return 0, err
	}
	return res.Rows, nil
}

// commitChange applies change, a metadata change of the target (no data
// files of the statement's) made in a transaction, with scope (nil for
// none) being what it depends on, through finish.
func (e *Executor) commitChange(ctx context.Context, tgt *planner.WriteTarget, scope *commit.Scope, change func(tx *table.Transaction) error, files []iceberg.DataFile) error {
	return e.finish(ctx, tgt, commit.Request{Scope: scope,
		Tx: func(tx *table.Transaction, _ table.Metadata) error { return change(tx) }}, files)
}
