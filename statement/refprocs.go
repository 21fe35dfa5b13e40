package statement

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/planner"
)

// The procedures that move refs: rollback_to_snapshot,
// rollback_to_timestamp, set_current_snapshot, cherrypick_snapshot and
// fast_forward. Each is one metadata commit with the refs it reads
// asserted, retried against the refreshed table when another commit won.

func init() {
	before := []procColumn{{"previous_snapshot_id", "BIGINT"}, {"current_snapshot_id", "BIGINT"}}
	registerProcedure(&procedure{
		name:    "rollback_to_snapshot",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "snapshot_id", kind: argInt, required: true}},
		columns: before,
		run:     runRollback,
	})
	registerProcedure(&procedure{
		name:    "rollback_to_timestamp",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "timestamp", kind: argTimestamp, required: true}},
		columns: before,
		run:     runRollback,
	})
	registerProcedure(&procedure{
		name:    "set_current_snapshot",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "snapshot_id", kind: argInt}, {name: "ref", kind: argString}},
		columns: before,
		run:     runSetCurrentSnapshot,
	})
	registerProcedure(&procedure{
		name:    "cherrypick_snapshot",
		params:  []procParam{{name: "table", kind: argString, required: true}, {name: "snapshot_id", kind: argInt, required: true}},
		columns: []procColumn{{"source_snapshot_id", "BIGINT"}, {"current_snapshot_id", "BIGINT"}},
		run:     runCherrypick,
	})
	registerProcedure(&procedure{
		name: "fast_forward",
		params: []procParam{{name: "table", kind: argString, required: true}, {name: "branch", kind: argString, required: true},
			{name: "to", kind: argString, required: true}},
		columns: []procColumn{{"branch_updated", "VARCHAR"}, {"previous_ref", "BIGINT"}, {"updated_ref", "BIGINT"}},
		run:     runFastForward,
	})
}

// setRef is the update pointing ref name at id, keeping its retention.
func setRef(name string, id int64, r table.SnapshotRef) table.Update {
	var maxRef, maxSnap int64
	var minSnaps int
	if r.MaxRefAgeMs != nil {
		maxRef = *r.MaxRefAgeMs
	}
	if r.MaxSnapshotAgeMs != nil {
		maxSnap = *r.MaxSnapshotAgeMs
	}
	if r.MinSnapshotsToKeep != nil {
		minSnaps = *r.MinSnapshotsToKeep
	}
	typ := r.SnapshotRefType
	if typ == "" {
		typ = table.BranchRef
	}
	return table.NewSetSnapshotRefUpdate(name, id, typ, maxRef, maxSnap, minSnaps)
}

func idOrNil(id *int64) any {
	if id == nil {
		return nil
	}
	return *id
}

func runRollback(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	prev, _ := commit.RefHead(tgt.Pinned.Table, table.MainBranch)
	id, hasID := c.int("snapshot_id")
	if !hasID {
		ts, _ := c.time("timestamp")
		snap, err := lastBefore(tgt.Pinned.Table, ts)
		if err != nil {
			return nil, err
		}
		id = snap
	}
	if tgt.Pinned.Table.SnapshotByID(id) == nil {
		return nil, fmt.Errorf("%w: no snapshot %d in %s", planner.ErrNotFound, id, tgt.Ref)
	}
	err = e.commitChange(ctx, tgt, nil, func(tx *table.Transaction) error { return tx.RollbackToSnapshot(id) }, nil)
	if err != nil {
		return nil, refError(err)
	}
	return [][]any{{idOrNil(prev), id}}, nil
}

// lastBefore is the newest ancestor of main committed before ts.
func lastBefore(tbl *table.Table, ts time.Time) (int64, error) {
	md := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.TimestampMs < ts.UnixMilli() {
			return s.SnapshotID, nil
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	return 0, fmt.Errorf("%w: main has no snapshot before %s", planner.ErrNotFound, ts.UTC().Format(time.RFC3339Nano))
}

// refError keeps the planner's sentinels and makes iceberg-go's refusals
// (not an ancestor, unknown snapshot) the client's error.
func refError(err error) error {
	if errors.Is(err, iceberg.ErrInvalidArgument) {
		return fmt.Errorf("%w: %v", planner.ErrInvalid, err)
	}
	return expireError(err)
}

func runSetCurrentSnapshot(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	id, hasID := c.int("snapshot_id")
	refName := c.str("ref", "")
	if hasID == (refName != "") {
		return nil, fmt.Errorf("%w: set_current_snapshot takes snapshot_id or ref, exactly one", planner.ErrInvalid)
	}
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	var prev *int64
	err = e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		var req table.Requirement
		prev, req = commit.RefHead(tbl, table.MainBranch)
		target := id
		var reqs []table.Requirement
		if refName != "" {
			r, ok := commit.FindRef(tbl, refName)
			if !ok {
				return nil, nil, fmt.Errorf("%w: no branch or tag %q", planner.ErrNotFound, refName)
			}
			target = r.SnapshotID
			rid := r.SnapshotID
			reqs = append(reqs, table.AssertRefSnapshotID(refName, &rid))
		}
		id = target
		if tbl.SnapshotByID(target) == nil {
			return nil, nil, fmt.Errorf("%w: no snapshot %d in %s", planner.ErrNotFound, target, tgt.Ref)
		}
		main, _ := commit.FindRef(tbl, table.MainBranch)
		main.SnapshotRefType = table.BranchRef
		return append(reqs, req), []table.Update{setRef(table.MainBranch, target, main)}, nil
	})
	if err != nil {
		return nil, err
	}
	return [][]any{{idOrNil(prev), id}}, nil
}

func runFastForward(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	branch, to := c.str("branch", ""), c.str("to", "")
	var prev, next int64
	err = e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		from, ok := commit.FindRef(tbl, branch)
		if !ok || from.SnapshotRefType != table.BranchRef {
			return nil, nil, fmt.Errorf("%w: no branch %q", planner.ErrNotFound, branch)
		}
		dst, ok := commit.FindRef(tbl, to)
		if !ok {
			return nil, nil, fmt.Errorf("%w: no branch or tag %q", planner.ErrNotFound, to)
		}
		prev, next = from.SnapshotID, dst.SnapshotID
		if prev == next {
			return nil, nil, nil
		}
		if !isAncestor(tbl, next, prev) {
			return nil, nil, fmt.Errorf("%w: cannot fast-forward %s: its head %d is not an ancestor of %s's head %d", planner.ErrInvalid, branch, prev, to, next)
		}
		reqs := []table.Requirement{table.AssertRefSnapshotID(branch, &prev), table.AssertRefSnapshotID(to, &next)}
		return reqs, []table.Update{setRef(branch, next, from)}, nil
	})
	if err != nil {
		return nil, err
	}
	return [][]any{{branch, prev, next}}, nil
}

// isAncestor reports whether ancestor is head or one of head's ancestors.
func isAncestor(tbl *table.Table, head, ancestor int64) bool {
	md := tbl.Metadata()
	for s := md.SnapshotByID(head); s != nil; {
		if s.SnapshotID == ancestor {
			return true
		}
		if s.ParentSnapshotID == nil {
			return false
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}

// sourceSnapshotProp is the summary property a cherry-picked snapshot
// names its source with (Iceberg's).
const sourceSnapshotProp = "source-snapshot-id"

func runCherrypick(ctx context.Context, e *Executor, c *procCall) ([][]any, error) {
	tgt, err := c.target(ctx, e)
	if err != nil {
		return nil, err
	}
	id, _ := c.int("snapshot_id")
	tbl := tgt.Pinned.Table
	src := tbl.SnapshotByID(id)
	if src == nil {
		return nil, fmt.Errorf("%w: no snapshot %d in %s", planner.ErrNotFound, id, tgt.Ref)
	}
	cur := tbl.CurrentSnapshot()
	if cur != nil && isAncestor(tbl, cur.SnapshotID, id) {
		return nil, fmt.Errorf("%w: snapshot %d is already in main's history", planner.ErrInvalid, id)
	}
	for s := cur; s != nil; {
		if s.Summary != nil && s.Summary.Properties[sourceSnapshotProp] == strconv.FormatInt(id, 10) {
			return nil, fmt.Errorf("%w: snapshot %d was cherry-picked already (as %d)", planner.ErrInvalid, id, s.SnapshotID)
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	// Fast-forward when the source sits right on main's head.
	if src.ParentSnapshotID != nil && cur != nil && *src.ParentSnapshotID == cur.SnapshotID || src.ParentSnapshotID == nil && cur == nil {
		err := e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
			prev, req := commit.RefHead(tbl, table.MainBranch)
			if (prev == nil) != (cur == nil) || prev != nil && *prev != cur.SnapshotID {
				return nil, nil, fmt.Errorf("%w: main moved while cherry-picking %d; run it again", planner.ErrConflict, id)
			}
			main, _ := commit.FindRef(tbl, table.MainBranch)
			main.SnapshotRefType = table.BranchRef
			return []table.Requirement{req}, []table.Update{setRef(table.MainBranch, id, main)}, nil
		})
		if err != nil {
			return nil, err
		}
		return [][]any{{id, id}}, nil
	}
	if src.Summary == nil || src.Summary.Operation != table.OpAppend {
		op := "unknown"
		if src.Summary != nil {
			op = string(src.Summary.Operation)
		}
		return nil, fmt.Errorf("%w: cherry-picking a %s snapshot onto a moved branch (only appends can be re-applied)", planner.ErrUnsupported, op)
	}
	files, err := addedDataFiles(ctx, tbl, src)
	if err != nil {
		return nil, err
	}
	res := &writeResults{Added: files}
	for _, f := range files {
		res.Rows += f.Count()
	}
	props := iceberg.Properties{sourceSnapshotProp: strconv.FormatInt(id, 10)}
	if err := e.commitTx(ctx, tgt, commit.Request{Append: true, Tx: func(tx *table.Transaction, base table.Metadata) error {
		fs, err := withFirstRowIDs(base, files)
		if err != nil {
			return err
		}
		return tx.AddDataFiles(ctx, fs, props)
	}}); err != nil {
		return nil, err
	}
	after, err := e.opts.Mounts.LoadTable(ctx, tgt.Ref)
	if err != nil {
		return nil, err
	}
	return [][]any{{id, after.Table.CurrentSnapshot().SnapshotID}}, nil
}

// addedDataFiles are the data files snapshot s added.
func addedDataFiles(ctx context.Context, tbl *table.Table, s *table.Snapshot) ([]iceberg.DataFile, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mans, err := s.Manifests(fsys)
	if err != nil {
		return nil, err
	}
	var out []iceberg.DataFile
	for _, m := range mans {
		if m.ManifestContent() != iceberg.ManifestContentData || m.SnapshotID() != s.SnapshotID {
			continue
		}
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return nil, err
			}
			if e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == s.SnapshotID {
				out = append(out, e.DataFile())
			}
		}
	}
	return out, nil
}
