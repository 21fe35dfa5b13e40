package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	// Branch is the branch a Tx commits to; "" is main.
	Branch string
	// Stats counts the commit; nil counts nothing.
	Stats *Stats

	// Tx is a transaction's change. Replay says whether iceberg-go may
	// retry a lost race against the refreshed table.
	Tx     Tx
	Replay bool
	// After, when set, runs once a Tx committed, under the commit's
	// context, with the metadata the transaction started from and the
	// table as committed.
	After func(ctx context.Context, before table.Metadata, committed *table.Table)

	// Meta is a change made by hand. A lost race computes it again from
	// the table Reload returns, DefaultRetries times.
	Meta   Meta
	Reload func(ctx context.Context) (*table.Table, error)
}

// Run commits r: the one entry point of every commit icefloe makes.
//
// A commit whose ctx ended before it started commits nothing; once
// started, it runs to its end (at most Timeout) whatever happens to ctx,
// so that a client's cancel never leaves its outcome unknown. A lost race
// is ErrConflict (nothing was committed), an error that may have been
// applied ErrUnknown.
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

func (r Request) runTx(ctx context.Context) (err error) {
	ctx, span := tracing.Span(ctx, "commit", attribute.String("icefloe.table", r.Name))
	defer func() { tracing.End(span, err) }()
	tbl, err := Table(r.Table, r.Catalog, r.Replay, r.Stats)
	if err != nil {
		return fmt.Errorf("commit to %s: %w", r.Name, err)
	}
	tx := tbl.NewTransaction()
	if r.Branch != "" {
		tx = tbl.NewTransactionOnBranch(r.Branch)
	}
	if err := r.Tx(tx, tbl.Metadata()); err != nil {
		if Lost(err) {
			return fmt.Errorf("%w on %s: %v", ErrConflict, r.Name, err)
		}
		return fmt.Errorf("commit to %s: %w", r.Name, err)
	}
	committed, err := tx.Commit(ctx)
	if err != nil {
		if errors.Is(err, ErrAlreadyCommitted) {
			return fmt.Errorf("commit to %s: %w", r.Name, err)
		}
		if Lost(err) {
			return fmt.Errorf("%w on %s: nothing was committed and the statement's files were deleted: %v", ErrConflict, r.Name, err)
		}
		return fmt.Errorf("%w on %s: the commit may or may not have been applied; its files were kept: %v", ErrUnknown, r.Name, err)
	}
	if r.After != nil {
		r.After(ctx, tbl.Metadata(), committed)
	}
	return nil
}

func (r Request) runMeta(ctx context.Context) error {
	cat := Catalog(r.Catalog, r.Stats)
	tbl := r.Table
	for attempt := 0; ; attempt++ {
		reqs, updates, err := r.Meta(tbl)
		if err != nil || len(updates) == 0 {
			return err
		}
		reqs = append(reqs, table.AssertTableUUID(tbl.Metadata().TableUUID()))
		_, _, err = cat.CommitTable(ctx, r.Ident, reqs, updates)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, table.ErrCommitFailed):
			return fmt.Errorf("%w on %s: the commit may or may not have been applied: %v", ErrUnknown, r.Name, err)
		case attempt >= DefaultRetries:
			return fmt.Errorf("%w on %s: nothing was committed: %v", ErrConflict, r.Name, err)
		}
		if err := Backoff(ctx, attempt+1); err != nil {
			return err
		}
		if tbl, err = r.Reload(ctx); err != nil {
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

// Backoff waits before attempt (≥ 1) of a commit that starts over: a
// jittered pause growing from about 10 ms to at most about half a second.
// It returns ctx's error if ctx ends first.
func Backoff(ctx context.Context, attempt int) error {
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
