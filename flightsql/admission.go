package flightsql

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
)

// How much a coordinator runs at once, and for how long.
//
// Every statement (a query being planned, an update until it committed,
// an ingest, a prepare) takes one of Options.Admission's slots; beyond
// them it waits in a bounded queue, and a full queue or a wait past
// QueueTimeout fails with ResourceExhausted. Metadata calls (GetCatalogs,
// GetTables, GetSqlInfo, …) never take one, nor does a cheap statement
// (parse.Statement.Cheap: a short SELECT or VALUES that names no table),
// nor one that does not parse: they keep answering when big statements
// fill the queue. A query's fragments count on the workers
// that run them (worker/limits.go).
//
// Every statement also runs under its statement timeout: the session's
// OptionStatementTimeout, else Options.StatementTimeout. Past it, what
// the coordinator does for it is cancelled, and the tickets it planned
// carry the same deadline, so every worker ends its fragments at that
// time too; the client gets DeadlineExceeded naming the timeout. A commit
// that had begun is not cancelled: it runs to its end, and the statement
// answers what happened (its row count when it committed, Unknown when
// the outcome is unknown); the coordinator logs that it ran late.

// OptionStatementTimeout is the session option of the statement timeout:
// a duration string ("30s", "2m"), or 0 or "0s" for the server's. It may
// only shorten the server's timeout when one is configured.
const OptionStatementTimeout = "statement_timeout"

// admitted runs one statement (st; nil for a call without one, an
// ingest) under its timeout and, unless it is cheap or its kind takes
// none (parse.Info.Slot), in a statement slot of the caller's principal.
// A statement that failed
// once its timeout passed answers the timeout, unless its commit's
// outcome is unknown: that answer must not read as "nothing was
// committed". late says it succeeded past its timeout: a commit that had
// begun runs to its end (internal/commit), and the answer says what
// happened.
func (s *Server) admitted(ctx context.Context, st *parse.Statement, run func(context.Context) (int64, error)) (n int64, late bool, err error) {
	ctx, cancel := admit.WithTimeout(ctx, s.statementTimeout(ctx))
	defer cancel()
	n, err = s.slotted(ctx, st, run)
	if te := admit.TimedOut(ctx); te != nil {
		if err == nil {
			return n, true, nil
		}
		if !errors.Is(err, planner.ErrCommitUnknown) {
			return n, false, te
		}
	}
	if ce := queryreg.Cause(ctx); ce != nil && err != nil && !errors.Is(err, planner.ErrCommitUnknown) {
		return n, false, ce
	}
	return n, false, err
}

func (s *Server) slotted(ctx context.Context, st *parse.Statement, run func(context.Context) (int64, error)) (int64, error) {
	if st == nil || st.Info().Slot && !st.Cheap() {
		release, err := s.statements.Acquire(ctx, auth.Name(ctx))
		if err != nil {
			return 0, err
		}
		defer release()
	}
	queryreg.From(ctx).Planning()
	return run(ctx)
}

// statementTimeout is the session's statement timeout, else the server's.
func (s *Server) statementTimeout(ctx context.Context) time.Duration {
	ss, err := session.GetSessionFromContext(ctx)
	if err != nil || ss.Closed() {
		return s.opts.StatementTimeout
	}
	if d, ok := s.timeoutOption(ss.GetSessionOption(OptionStatementTimeout)); ok && d > 0 {
		return d
	}
	return s.opts.StatementTimeout
}

// timeoutOption parses a statement_timeout value; ok false means it is
// not one this server accepts (not a duration, negative, or longer than
// the server's own timeout).
func (s *Server) timeoutOption(v *flight.SessionOptionValue) (time.Duration, bool) {
	sv, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(sv.StringValue)
	if err != nil || d < 0 {
		return 0, false
	}
	if max := s.opts.StatementTimeout; max > 0 && d > max {
		return 0, false
	}
	return d, true
}

// AdmissionStats returns the counts of the coordinator's statement
// limiter.
func (s *Server) AdmissionStats() admit.Stats { return s.statements.Stats() }
