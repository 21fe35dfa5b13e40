package commit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// TablesCatalog commits changes to several tables of one catalog at once,
// all or none: iceberg-go's catalog.TransactionalCatalog (a REST
// catalog's transactions/commit, the SQL catalogs icefloe opens). A
// change that lost a race to another writer fails the whole commit with
// table.ErrCommitFailed, and nothing was applied.
type TablesCatalog interface {
	CommitTransaction(ctx context.Context, commits []table.TableCommit) error
}

// Tables commits the Meta changes rs to their tables, all or none,
// through cat: the entry point of a multi-table commit, as Run is of one.
//
// It takes the commit turn of every table (in one order, so that two
// multi-table commits never wait on each other), computes each change
// from its table as loaded in its turn, and sends them all in one
// commit. A lost race commits nothing and starts over on the reloaded
// tables, DefaultRetries times, then is ErrConflict; one the catalog says
// applied nothing (catalog.ErrNotApplied, a table not found) is returned
// as it is; any other failure's outcome is not known: ErrUnknown. As Run, it starts nothing once ctx
// ended, and once started runs to its end (at most Timeout). The
// statement's id is stamped on every snapshot, and a statement run again
// under a client's id commits nothing again.
func Tables(ctx context.Context, rs []Request, cat TablesCatalog) error {
	names := make([]string, len(rs))
	for i, r := range rs {
		if r.Meta == nil {
			return fmt.Errorf("commit: a multi-table commit takes Meta changes only (%s)", r.Name)
		}
		names[i] = r.Name
	}
	what := strings.Join(names, ", ")
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("commit to %s: nothing was committed: %w", what, context.Cause(ctx))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(rs[a].queueKey(), rs[b].queueKey()) })
	for i := 1; i < len(order); i++ {
		if rs[order[i]].queueKey() == rs[order[i-1]].queueKey() {
			return fmt.Errorf("commit: %s changes twice in one multi-table commit", rs[order[i]].Name)
		}
	}
	tbls := make([]*table.Table, len(rs))
	for i, r := range rs {
		tbls[i] = r.Table
	}
	st := statementOf(ctx)
	var stats *Stats
	if len(rs) > 0 {
		stats = rs[0].Stats
	}
	tries := new(atomic.Int32)
	for attempt := 0; ; attempt++ {
		var sent []table.TableCommit
		err := inTurns(ctx, rs, order, func() error {
			commits := make([]table.TableCommit, 0, len(rs))
			for i, r := range rs {
				reqs, ups, err := r.Meta(tbls[i])
				if err != nil {
					return err
				}
				if len(ups) == 0 {
					continue
				}
				if st != nil {
					if prior := st.committedBefore(tbls[i].Metadata()); prior != nil {
						return fmt.Errorf("%w: statement id %q made snapshot %d of %s; nothing was committed again", ErrAlreadyCommitted, st.id, prior.SnapshotID, r.Name)
					}
					if ups, err = st.stamp(ups); err != nil {
						return err
					}
				}
				reqs = append(slices.Clip(reqs), table.AssertTableUUID(tbls[i].Metadata().TableUUID()))
				commits = append(commits, table.TableCommit{Identifier: r.Ident, Requirements: reqs, Updates: ups})
			}
			if len(commits) == 0 {
				return nil
			}
			sent = commits
			err := cat.CommitTransaction(ctx, commits)
			stats.attempt(tries, err)
			return err
		})
		switch {
		case err == nil:
			for _, c := range sent {
				st.committedIn(c.Updates)
				if snaps, ok := AddedSnapshots(c.Updates); ok {
					stats.committed(snaps)
				}
			}
			return nil
		case sent == nil, errors.Is(err, catalog.ErrNotApplied), errors.Is(err, icecat.ErrNoSuchTable):
			return err
		case !errors.Is(err, table.ErrCommitFailed):
			return fmt.Errorf("%w on %s: the commit may or may not have been applied: %v", ErrUnknown, what, err)
		case attempt >= DefaultRetries:
			return fmt.Errorf("%w on %s: nothing was committed: %v", ErrConflict, what, err)
		}
		if err := backoff(ctx, attempt+1); err != nil {
			return fmt.Errorf("%w on %s: nothing was committed: %v", ErrConflict, what, err)
		}
		for i, r := range rs {
			if tbls[i], err = r.reload(ctx); err != nil {
				return err
			}
		}
	}
}

// inTurns runs f while every table of rs (taken in order) is this
// process's commit to make.
func inTurns(ctx context.Context, rs []Request, order []int, f func() error) error {
	if len(order) == 0 {
		return f()
	}
	return rs[order[0]].inTurn(ctx, func() error { return inTurns(ctx, rs, order[1:], f) })
}
