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
	"github.com/icefloe/icefloe/internal/queries"
	"github.com/icefloe/icefloe/internal/tracing"
)

// Statement kinds in the audit log.
const (
	kindQuery   = "query"
	kindUpdate  = "update"
	kindIngest  = "ingest"
	kindPrepare = "prepare"
)

// audited runs one statement and writes its audit line: who, from where,
// the SQL, what the planner noted it read and wrote (the Record in run's
// context), the rows run returns (-1 for a query, whose rows the workers
// stream), how long and how it ended. run may set the entry's kind. A
// failed prepare is a line of its own; a prepare that succeeds is not
// (its execution is). Without an audit log it only runs.
func (s *Server) audited(ctx context.Context, kind, sql string, run func(ctx context.Context, e *audit.Entry) (int64, error)) (err error) {
	ctx, span := tracing.Statement(ctx, kind)
	defer func() { s.ended(ctx, span, kind, err) }()
	if ctx, err = withStatementID(ctx); err != nil {
		return err
	}
	ctx, q := s.queries.Begin(ctx, auth.Name(ctx), kind, audit.Redact(sql))
	var rows int64
	defer func() {
		err = namedResource(queries.IDFrom(ctx), err)
		q.SetCode(status.Code(ToStatus(err)).String())
		q.Done(err, rows)
	}()
	if n := s.opts.MaxStatementBytes; n > 0 && len(sql) > n {
		return fmt.Errorf("%w: query %s: the statement's text is %d bytes, more than %d (limit key %s)",
			ErrStatementTooLarge, queries.IDFrom(ctx), len(sql), n, KeyMaxStatementBytes)
	}
	var late bool
	if s.opts.Audit == nil {
		e := &audit.Entry{Kind: kind}
		rows, late, err = s.admitted(ctx, sql, func(ctx context.Context) (int64, error) { return run(ctx, e) })
		q.SetKind(e.Kind)
		s.lateWrite(ctx, e.Kind, late, rows)
		return err
	}
	start := time.Now()
	ctx, rec := audit.WithRecord(ctx)
	e := audit.Entry{Event: audit.EventStatement, Kind: kind, Statement: audit.Statement(sql), SQL: s.opts.Audit.SQL(sql), TraceID: tracing.TraceID(ctx)}
	rows, late, err = s.admitted(ctx, sql, func(ctx context.Context) (int64, error) { return run(ctx, &e) })
	q.SetKind(e.Kind)
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
			zap.String("query_id", queries.IDFrom(ctx)), zap.Duration("statement_timeout", s.statementTimeout(ctx)), zap.Int64("rows", rows))
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
