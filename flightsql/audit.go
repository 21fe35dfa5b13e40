package flightsql

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/internal/tracing"
)

// Statement kinds in the audit log: the kind table's (parse.AuditQuery,
// parse.AuditUpdate) and the calls of this package's own.
const (
	kindQuery   = parse.AuditQuery
	kindUpdate  = parse.AuditUpdate
	kindIngest  = "ingest"
	kindPrepare = "prepare"
)

// auditedStatement parses text — the one parse of the statement — and
// runs it with run, under its timeout and admission (admitted), and
// writes its audit line: who, from where, the SQL, what the planner noted
// it read and wrote (the Record in run's context), the rows run returns
// (-1 for a query, whose rows the workers stream), how long and how it
// ended. kind is the statement's kind in the audit log; "" means the
// kind the kind table gives it. A statement that does not parse, or whose
// text is too large, is refused without running and is audited as well.
// A failed prepare is a line of its own; a prepare that succeeds is not
// (its execution is). Without an audit log it only runs.
func (s *Server) auditedStatement(ctx context.Context, kind, text string, run func(ctx context.Context, st *parse.Statement, e *audit.Entry) (int64, error)) error {
	var st *parse.Statement
	var perr error
	tooLarge := s.opts.MaxStatementBytes > 0 && len(text) > s.opts.MaxStatementBytes
	if !tooLarge {
		st, perr = parse.Parse(text)
	}
	if kind == "" {
		kind = parse.AuditQuery
		if perr == nil && st != nil {
			kind = st.Info().Audit
		}
	}
	var refuse func(ctx context.Context) error
	if tooLarge {
		refuse = func(ctx context.Context) error {
			return fmt.Errorf("%w: query %s: the statement's text is %d bytes, more than %d (limit key %s)",
				ErrStatementTooLarge, queryreg.IDFrom(ctx), len(text), s.opts.MaxStatementBytes, KeyMaxStatementBytes)
		}
	}
	return s.account(ctx, kind, st, refuse, func(ctx context.Context, e *audit.Entry) (int64, error) {
		if perr != nil {
			return 0, perr // audited, without a slot (parse.KindInvalid takes none)
		}
		return run(ctx, st, e)
	})
}

// audited runs a call that carries no statement text (an ingest) as
// auditedStatement runs a statement.
func (s *Server) audited(ctx context.Context, kind string, run func(ctx context.Context, e *audit.Entry) (int64, error)) error {
	return s.account(ctx, kind, nil, nil, run)
}

// account runs run under its timeout and admission (admitted) for st
// (nil without a statement) and writes its audit line. refuse, when set,
// fails the call before it is admitted or audited (a statement too large
// to parse).
func (s *Server) account(ctx context.Context, kind string, st *parse.Statement, refuse func(context.Context) error, run func(ctx context.Context, e *audit.Entry) (int64, error)) (err error) {
	ctx, span := tracing.Statement(ctx, kind)
	defer func() { s.ended(ctx, span, kind, err) }()
	if ctx, err = withStatementID(ctx); err != nil {
		return err
	}
	sql := ""
	if st != nil {
		sql = st.Redacted()
	}
	ctx, q := s.queries.Begin(ctx, auth.Name(ctx), kind, sql)
	var rows int64
	defer func() {
		err = namedResource(queryreg.IDFrom(ctx), err)
		q.SetCode(status.Code(ToStatus(err)).String())
		q.Done(err, rows)
	}()
	if refuse != nil {
		return refuse(ctx)
	}
	var late bool
	if s.opts.Audit == nil {
		e := &audit.Entry{Kind: kind}
		rows, late, err = s.admitted(ctx, st, func(ctx context.Context) (int64, error) { return run(ctx, e) })
		s.lateWrite(ctx, e.Kind, late, rows)
		return err
	}
	start := time.Now()
	ctx, rec := audit.WithRecord(ctx)
	e := audit.Entry{Event: audit.EventStatement, Kind: kind, TraceID: tracing.TraceID(ctx)}
	if st != nil {
		e.Statement, e.SQL = st.Keyword(), s.opts.Audit.SQL(st)
	}
	rows, late, err = s.admitted(ctx, st, func(ctx context.Context) (int64, error) { return run(ctx, &e) })
	s.lateWrite(ctx, e.Kind, late, rows)
	if err == nil && e.Kind == kindPrepare {
		return nil
	}
	e.Rows, e.Duration = rows, audit.Since(start)
	s.caller(ctx, &e)
	rec.Fill(&e)
	s.opts.Audit.Write(e, ToStatus(err))
	return err
}

// lateWrite logs an update or ingest that succeeded past its statement
// timeout: its commit had begun, and a begun commit runs to its end.
func (s *Server) lateWrite(ctx context.Context, kind string, late bool, rows int64) {
	if late && (kind == kindUpdate || kind == kindIngest) {
		tracing.Logger(ctx, s.log).Warn("statement finished past its statement_timeout: its commit had begun, and a begun commit runs to its end",
			zap.String("query_id", queryreg.IDFrom(ctx)), zap.Duration("statement_timeout", s.statementTimeout(ctx)), zap.Int64("rows", rows))
	}
}

// ended ends a statement's span and logs a failed statement with its
// trace id, the code and the message the client gets.
func (s *Server) ended(ctx context.Context, span trace.Span, kind string, err error) {
	tracing.End(span, err)
	if err != nil {
		st := status.Convert(ToStatus(err))
		tracing.Logger(ctx, s.log).Info("statement failed", zap.String("kind", kind),
			zap.String("code", st.Code().String()), zap.String("error", st.Message()))
	}
}

// caller fills in who made the call and from where.
func (s *Server) caller(ctx context.Context, e *audit.Entry) {
	if p := auth.FromContext(ctx); p != nil {
		e.Principal, e.Method = p.Name, p.Method
	}
	e.Client = auth.ClientAddr(ctx)
}
