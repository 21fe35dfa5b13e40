package admit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/icefloe/icefloe/internal/engine"
)

// ErrStatementTimeout: a statement ran past its statement timeout and was
// cancelled everywhere it ran (DeadlineExceeded).
var ErrStatementTimeout = errors.New("statement timeout")

// TimeoutError is the cause a statement's context ends with when its
// timeout d passes.
func TimeoutError(d time.Duration) error {
	return fmt.Errorf("%w: the statement ran longer than its statement_timeout of %s and was cancelled", ErrStatementTimeout, d)
}

// Deadline is when a statement's timeout ends it: tickets carry it to the
// workers so that every fragment of the statement ends at the same time.
type Deadline struct {
	At      time.Time
	Timeout time.Duration
}

type deadlineKey struct{}

// WithTimeout returns ctx ending after d with TimeoutError(d) as its cause,
// and carrying the Deadline for DeadlineOf. d <= 0 means no timeout.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	dl := Deadline{At: time.Now().Add(d), Timeout: d}
	ctx = context.WithValue(ctx, deadlineKey{}, dl)
	return context.WithDeadlineCause(ctx, dl.At, TimeoutError(d))
}

// WithDeadline returns ctx ending at dl (a ticket's), with the timeout's
// cause. A zero dl returns ctx unchanged but cancellable.
func WithDeadline(ctx context.Context, dl Deadline) (context.Context, context.CancelFunc) {
	if dl.At.IsZero() {
		return context.WithCancel(ctx)
	}
	ctx = context.WithValue(ctx, deadlineKey{}, dl)
	return context.WithDeadlineCause(ctx, dl.At, TimeoutError(dl.Timeout))
}

// DeadlineOf returns the statement deadline ctx carries, zero if none.
func DeadlineOf(ctx context.Context) Deadline {
	dl, _ := ctx.Value(deadlineKey{}).(Deadline)
	return dl
}

// TimedOut returns the timeout error when ctx ended by its statement
// timeout, otherwise nil.
func TimedOut(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrStatementTimeout) {
		return err
	}
	return nil
}

// Exhausted says whether err is a resource running out: a full queue, a
// queue wait past its timeout, or DuckDB out of memory or spill disk. The
// Flight boundaries answer it with ResourceExhausted.
func Exhausted(err error) bool {
	return errors.Is(err, ErrQueueFull) || errors.Is(err, ErrQueuedTooLong) || engine.IsResourceError(err)
}
