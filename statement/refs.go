package statement

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// The branch and tag DDL: Spark's ALTER TABLE … CREATE [OR REPLACE] |
// REPLACE | DROP BRANCH|TAG, each one metadata commit with the refs it
// reads asserted (commitMeta). The procedures that move refs (rollback,
// cherry-pick, fast-forward) are in refprocs.go.

// alterRefs runs ALTER TABLE t CREATE [OR REPLACE] | REPLACE | DROP
// BRANCH|TAG (Spark's grammar, docs/sql.md).
func (e *Executor) alterRefs(ctx context.Context, tgt *planner.WriteTarget, d *parse.RefChange) error {
	return e.commitMeta(ctx, tgt, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		return refUpdate(tbl, d)
	})
}

// refUpdate is the metadata commit of the statement against tbl.
func refUpdate(tbl *table.Table, d *parse.RefChange) ([]table.Requirement, []table.Update, error) {
	kind := table.TagRef
	if d.Branch {
		kind = table.BranchRef
	}
	cur, exists := commit.FindRef(tbl, d.Name)
	_, req := commit.RefHead(tbl, d.Name)
	what := string(kind)
	switch {
	case exists && cur.SnapshotRefType != kind:
		return nil, nil, fmt.Errorf("%w: %q is a %s, not a %s", planner.ErrInvalid, d.Name, cur.SnapshotRefType, kind)
	case d.Drop && !exists:
		if d.IfExists {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("%w: no %s %q", planner.ErrNotFound, what, d.Name)
	case d.Drop && d.Name == table.MainBranch:
		return nil, nil, fmt.Errorf("%w: the main branch cannot be dropped", planner.ErrInvalid)
	case d.Drop:
		return []table.Requirement{req}, []table.Update{table.NewRemoveSnapshotRefUpdate(d.Name)}, nil
	case d.Create && !d.Replace && exists:
		if d.IfNotExists {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("%w: %s %q", planner.ErrExists, what, d.Name)
	case !d.Create && !exists:
		return nil, nil, fmt.Errorf("%w: no %s %q to replace", planner.ErrNotFound, what, d.Name)
	}
	var id int64
	switch {
	case d.Version != nil:
		if tbl.SnapshotByID(*d.Version) == nil {
			return nil, nil, fmt.Errorf("%w: no snapshot %d", planner.ErrNotFound, *d.Version)
		}
		id = *d.Version
	case tbl.CurrentSnapshot() != nil:
		id = tbl.CurrentSnapshot().SnapshotID
	default:
		return nil, nil, fmt.Errorf("%w: the table has no snapshot yet to put %s %q on", planner.ErrInvalid, what, d.Name)
	}
	reqs := []table.Requirement{req}
	if d.Version == nil {
		main, mreq := commit.RefHead(tbl, table.MainBranch)
		if main != nil {
			reqs = append(reqs, mreq)
		}
	}
	return reqs, []table.Update{table.NewSetSnapshotRefUpdate(d.Name, id, kind, d.RetainMs, d.MaxSnapshotAgeMs, d.MinSnapshots)}, nil
}
