package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// Writes to a branch (branchTarget). Package statement runs Spark's
// ALTER TABLE … CREATE/REPLACE/DROP BRANCH|TAG, the procedures that move
// refs (statement/refprocs.go) and their metadata commits.

// branchTarget resolves a write target named the Spark way, t.branch_b:
// the table t, committing to its branch b, which must exist. notFound is
// the error of the name as a table, returned when it is not that either.
func (p *Planner) branchTarget(ctx context.Context, sess Session, parts []string, notFound error, privs ...authz.Privilege) (*WriteTarget, error) {
	if _, name, ok := sparkRefName(parts, true); ok && !strings.HasPrefix(strings.ToLower(parts[len(parts)-1]), "branch_") {
		return nil, fmt.Errorf("%w: %s names tag %q; tags are read-only, write to a branch", ErrInvalid, strings.Join(parts, "."), name)
	}
	tableParts, name, ok := sparkRefName(parts, false)
	if !ok {
		return nil, notFound
	}
	ref, err := TableName(sess, tableParts)
	if err != nil {
		return nil, notFound
	}
	tgt, err := p.LoadTargetRef(ctx, ref, privs...)
	if errors.Is(err, ErrDenied) {
		// The caller may not write the table the branch is of.
		return nil, err
	}
	if err != nil {
		return nil, notFound
	}
	if r, ok := commit.FindRef(tgt.Pinned.Table, name); !ok || r.SnapshotRefType != table.BranchRef {
		return nil, fmt.Errorf("%w: %s has no branch %q (ALTER TABLE %s CREATE BRANCH %s)", ErrNotFound, ref, name, ref, name)
	}
	tgt.Branch = name
	return tgt, nil
}
