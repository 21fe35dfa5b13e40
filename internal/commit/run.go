package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/attribute"

	"github.com/icefloe/icefloe/internal/tracing"
)

// Errors of a commit, wrapped with the table's name.
var (
	// ErrConflict: the commit lost to concurrent commits even after
	// retrying against the refreshed table; nothing was committed
	// (Aborted).
	ErrConflict = errors.New("commit: commit conflict")
	// ErrUnknown: the commit failed in a way that leaves its outcome
	// unknown: the catalog may have applied it (Unknown).
	ErrUnknown = errors.New("commit: commit outcome unknown")
)

// Timeout bounds one commit once it has started.
const Timeout = 2 * time.Minute

// Tx is a change made in an iceberg-go transaction; base is the metadata
// the transaction starts from.
type Tx func(tx *table.Transaction, base table.Metadata) error

// Meta computes a metadata commit from the current table: its
// requirements (Run adds the table's UUID) and updates; no updates
// commits nothing.
type Meta func(tbl *table.Table) ([]table.Requirement, []table.Update, error)

// Request is one commit to one table: exactly one of Tx and Meta.
type Request struct {
	// Name is the table's name in messages and traces; Ident names it in
	// Catalog.
	Name  string
	Ident table.Identifier
	// Table is the table the commit starts from; Catalog is where it
	// commits.
	Table   *table.Table
	Catalog table.CatalogIO
	// Reload loads the table as it now is, to build a change on (see
	// Tx); nil loads it from Catalog.
	Reload func(ctx context.Context) (*table.Table, error)
	// Branch is the branch a Tx commits to; "" is main.
	Branch string
	// Stats counts the commit; nil counts nothing.
	Stats *Stats

	// Tx is a transaction's change, built on the metadata it is given.
	//
	// Every attempt builds it on the table loaded in this process's turn
	// to commit to the table (queue.go), the first included, after
	// checking Scope against what was committed since the statement read
	// the table; a lost race builds it again, up to the table's
	// commit.retry.num-retries times (DefaultRetries when unset; Append
	// commits retry appendPatience times as often). A Pinned change is
	// built once, on Table, and a lost race fails it: for a change valid
	// only on the version it was computed from.
	Tx     Tx
	Pinned bool
	// Scope is what the change depends on (nil: nothing a concurrent
	// commit can invalidate, such as an append or a change computed
	// from the metadata it is built on).
	Scope *Scope
	// Append says the change only adds data files: it cannot conflict,
	// only lose races, so it is retried more patiently.
	Append bool
	// OwnFiles says the Tx writes data or delete files of its own on each
	// attempt (iceberg-go's Delete does): those of an attempt that
	// committed nothing are deleted. Without it the files a snapshot adds
	// are the statement's, which every attempt adds again.
	OwnFiles bool
	// After, when set, runs once a Tx committed, under the commit's
	// context, with the metadata the transaction started from and the
	// table as committed.
	After func(ctx context.Context, before table.Metadata, committed *table.Table)

	// Warn, when set, hears what went wrong without failing the commit:
	// partition statistics that could not be written (the snapshot is
	// committed without them).
	Warn func(error)

	// Meta is a change made by hand, computed again from the table
	// Reload returns after a lost race, DefaultRetries times.
	Meta Meta
}

// appendPatience is how many times as often as other commits an append
// is retried: adding files cannot conflict with anything, so a table
// that other writers keep busy only needs patience.
const appendPatience = 8

// Run commits r: the one entry point of every commit icefloe makes.
//
// A commit whose ctx ended before it started commits nothing; once
// started, it runs to its end (at most Timeout) whatever happens to ctx,
// so that a client's cancel never leaves its outcome unknown. A lost race
// or a conflict with a concurrent commit is ErrConflict (nothing was
// committed), an error that may have been applied ErrUnknown.
func Run(ctx context.Context, r Request) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("commit to %s: nothing was committed: %w", r.Name, context.Cause(ctx))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	if r.Meta != nil {
		return r.runMeta(ctx)
	}
	return r.runTx(ctx)
}

// retries is how many times a lost race is retried.
func (r Request) retries() int {
	n := DefaultRetries
	if v, ok := r.Table.Properties()[table.CommitNumRetriesKey]; ok {
		if p, err := strconv.Atoi(v); err == nil && p >= 0 {
			n = p
		}
	}
	if r.Append {
		n = (n + 1) * appendPatience
	}
	return n
}

// reload loads the table as it now is; it fails with ErrConflict when
// the table was dropped or replaced by another since the statement
// loaded it.
func (r Request) reload(ctx context.Context) (*table.Table, error) {
	var fresh *table.Table
	var err error
	if r.Reload != nil {
		fresh, err = r.Reload(ctx)
	} else {
		fresh, err = r.Catalog.LoadTable(ctx, r.Ident)
	}
	if err != nil {
		return nil, fmt.Errorf("commit to %s: load the table: %w", r.Name, err)
	}
	if fresh.Metadata().TableUUID() != r.Table.Metadata().TableUUID() {
		return nil, fmt.Errorf("%w on %s: the table was dropped or replaced while the statement ran", ErrConflict, r.Name)
	}
	return fresh, nil
}

func (r Request) runTx(ctx context.Context) (err error) {
	ctx, span := tracing.Span(ctx, "commit", attribute.String("icefloe.table", r.Name))
	defer func() { tracing.End(span, err) }()
	tries := new(atomic.Int32)
	var scope *scopeCheck
	if r.Scope != nil {
		scope = newScopeCheck(r.Scope, r.Branch)
	}
	budget := r.retries()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return fmt.Errorf("%w on %s: nothing was committed: %v", ErrConflict, r.Name, err)
			}
		}
		var before table.Metadata
		var committed *table.Table
		err := r.inTurn(ctx, func() error {
			var err error
			before, committed, err = r.attempt(ctx, attempt, scope, tries)
			return err
		})
		var unsent *unsentError
		var conflict *conflictError
		switch {
		case err == nil:
			if r.After != nil {
				r.After(ctx, before, committed)
			}
			return nil
		case errors.As(err, &conflict):
			r.Stats.conflict()
			return fmt.Errorf("%w on %s: %s; nothing was committed and the statement's files were deleted", ErrConflict, r.Name, conflict.detail)
		case errors.As(err, &unsent):
			return unsent.err
		case errors.Is(err, ErrAlreadyCommitted):
			return fmt.Errorf("commit to %s: %w", r.Name, err)
		case Lost(err):
			if r.Pinned || attempt >= budget {
				return fmt.Errorf("%w on %s: nothing was committed and the statement's files were deleted: %v", ErrConflict, r.Name, err)
			}
		default:
			return fmt.Errorf("%w on %s: the commit may or may not have been applied; its files were kept: %v", ErrUnknown, r.Name, err)
		}
	}
}

// unsentError is an attempt that failed before anything was sent to the
// catalog, for good.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

func unsent(format string, args ...any) error {
	return &unsentError{err: fmt.Errorf(format, args...)}
}

// attempt is one attempt of a Tx commit, made in the table's turn: load
// the table (unless Pinned), check the scope, build the change and send
// it. It returns the metadata the change was built on and the table as
// committed.
func (r Request) attempt(ctx context.Context, n int, scope *scopeCheck, tries *atomic.Int32) (table.Metadata, *table.Table, error) {
	base, fresh := r.Table, false
	if !r.Pinned {
		var err error
		if base, err = r.reload(ctx); err != nil {
			if n > 0 && !errors.Is(err, ErrConflict) {
				// Earlier attempts lost their races: nothing was committed.
				return nil, nil, unsent("%w on %s: %w", ErrConflict, r.Name, err)
			}
			return nil, nil, &unsentError{err: err}
		}
		fresh = true
	}
	if scope != nil {
		if err := scope.check(ctx, base); err != nil {
			var conflict *conflictError
			if errors.As(err, &conflict) {
				return nil, nil, err
			}
			return nil, nil, unsent("commit to %s: check concurrent commits: %w", r.Name, err)
		}
	}
	tbl, err := prepare(r, base, tries, fresh)
	if err != nil {
		return nil, nil, unsent("commit to %s: %w", r.Name, err)
	}
	tx := tbl.NewTransaction()
	if r.Branch != "" {
		tx = tbl.NewTransactionOnBranch(r.Branch)
	}
	if err := r.Tx(tx, tbl.Metadata()); err != nil {
		if Lost(err) {
			return nil, nil, err
		}
		return nil, nil, unsent("commit to %s: %w", r.Name, err)
	}
	committed, err := tx.Commit(ctx)
	return tbl.Metadata(), committed, err
}

func (r Request) runMeta(ctx context.Context) error {
	tries := new(atomic.Int32)
	cat := conflictCatalog{CatalogIO: r.Catalog, stats: r.Stats, tries: tries}
	tbl := r.Table
	for attempt := 0; ; attempt++ {
		var updates []table.Update
		err := r.inTurn(ctx, func() error {
			reqs, ups, err := r.Meta(tbl)
			if err != nil || len(ups) == 0 {
				return err
			}
			updates = ups
			reqs = append(reqs, table.AssertTableUUID(tbl.Metadata().TableUUID()))
			_, _, err = cat.CommitTable(ctx, r.Ident, reqs, updates)
			return err
		})
		switch {
		case err == nil:
			return nil
		case updates == nil:
			return err
		case !errors.Is(err, table.ErrCommitFailed):
			return fmt.Errorf("%w on %s: the commit may or may not have been applied: %v", ErrUnknown, r.Name, err)
		case attempt >= DefaultRetries:
			return fmt.Errorf("%w on %s: nothing was committed: %v", ErrConflict, r.Name, err)
		}
		if err := backoff(ctx, attempt+1); err != nil {
			return err
		}
		if tbl, err = r.reload(ctx); err != nil {
			return err
		}
	}
}

// Lost tells a commit that definitely did not land: a conflict
// iceberg-go gave up retrying, or a base that diverged from the branch
// (validated before anything is sent to the catalog).
func Lost(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, table.ErrCommitDiverged)
}

// backoff waits before attempt (≥ 1) of a commit that starts over: a
// jittered pause growing from about 10 ms to at most about half a second.
// It returns ctx's error if ctx ends first.
func backoff(ctx context.Context, attempt int) error {
	base := min(10*time.Millisecond<<min(attempt, 6), 500*time.Millisecond)
	t := time.NewTimer(base/2 + time.Duration(rand.Int64N(int64(base/2)+1)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
