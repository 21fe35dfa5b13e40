package worker

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// How much a worker runs at once.
//
// Each ticket is one fragment. A worker runs at most Options.Admission's
// MaxRunning fragments at once (at most MaxPerPrincipal of one
// principal), queues MaxQueued more for QueueTimeout and refuses the rest
// with ResourceExhausted. Two kinds of ticket pass without a slot:
//   - cheap ones, which read no table and pull no child (SELECT 1, the
//     rows of an EXPLAIN): they keep answering while big queries fill
//     the worker;
//   - child fragments, which a parent fragment pulls: the parent holds
//     the slot of its whole tree, and a child waiting behind parents
//     that wait for it would never run.
//
// A ticket with a Deadline ends there, wherever it runs (its queue wait
// included), with DeadlineExceeded naming the statement timeout.

// errStatementTimeout is the cause of a fragment's context that its
// statement's timeout ended.
var errStatementTimeout = admit.ErrStatementTimeout

// needsSlot says whether t waits for a fragment slot (see above).
func needsSlot(t *wire.Ticket) bool {
	if t.Child {
		return false
	}
	return len(t.Scans) > 0 || len(t.Children) > 0 || t.Write != nil
}

// limited runs fn for t within t's statement deadline and, when t needs
// one, a fragment slot.
func (s *Server) limited(ctx context.Context, t *wire.Ticket, fn func(context.Context) error) error {
	ctx, cancel := admit.WithDeadline(ctx, admit.Deadline{At: t.Deadline, Timeout: t.Timeout})
	defer cancel()
	err := s.slotted(ctx, t, fn)
	te := admit.TimedOut(ctx)
	if te == nil && !t.Deadline.IsZero() && !time.Now().Before(t.Deadline) {
		// The caller's gRPC deadline (the same instant) came first.
		te = admit.TimeoutError(t.Timeout)
	}
	if te != nil && err != nil {
		s.timedOut.Add(1)
		tracing.Logger(ctx, s.log).Info("worker: fragment cancelled by its statement timeout",
			zap.String("query", t.QueryID), zap.Duration("timeout", t.Timeout))
		return te
	}
	return err
}

func (s *Server) slotted(ctx context.Context, t *wire.Ticket, fn func(context.Context) error) error {
	if needsSlot(t) {
		release, err := s.fragments.Acquire(ctx, t.Principal)
		if err != nil {
			return fmt.Errorf("fragment of query %s: %w", t.QueryID, err)
		}
		defer release()
	}
	return fn(ctx)
}

// TimedOutFragments is how many fragments this worker ended because their
// statement timeout passed.
func (s *Server) TimedOutFragments() int64 { return s.timedOut.Load() }

// Admission returns the counts of the worker's fragment limiter.
func (s *Server) Admission() admit.Stats { return s.fragments.Stats() }
