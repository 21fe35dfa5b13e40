package statement

import (
	"context"
	"errors"
	"fmt"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// Plan plans st as the planner does, except CALL, whose procedure it runs
// (procedures.go), and EXPLAIN of a statement that
// EXPLAIN runs as a dry run (parse.Info.DryRun: INSERT, UPDATE, DELETE,
// MERGE, TRUNCATE, CREATE TABLE), which it answers itself: it runs the
// write as a dry run and plans the lines noted as the EXPLAIN's rows.
// args bind the statement's parameters (see planner.Planner.Plan).
func (e *Executor) Plan(ctx context.Context, s planner.Session, st *parse.Statement, args ...any) (*planner.Plan, error) {
	if st.Kind == parse.KindCall {
		if len(args) > 0 {
			return nil, fmt.Errorf("%w: parameters in %s", planner.ErrUnsupported, st.Kind)
		}
		return e.planCall(ctx, s, st)
	}
	ex, ok := st.Body.(*parse.Explain)
	if !ok || ex.Analyze || !ex.Inner.Info().DryRun {
		return e.planner.Plan(ctx, s, st, args...)
	}
	workers, err := e.planner.LiveWorkers()
	if err != nil {
		return nil, err
	}
	return e.explainWrite(ctx, s, st, ex.Inner, workers, args)
}

// explainWrite answers EXPLAIN of an INSERT, UPDATE, DELETE, MERGE,
// TRUNCATE or CREATE TABLE … AS (inner, the statement of st): the plan
// of its reads, its write fragments and its commit, without writing
// anything.
func (e *Executor) explainWrite(ctx context.Context, s planner.Session, st, inner *parse.Statement, workers []planner.Worker, args []any) (*planner.Plan, error) {
	schema, err := e.Bind(ctx, s, st)
	if err != nil {
		return nil, err
	}
	d := &planner.DryRun{}
	d.Note("statement", "%s", inner.Text)
	_, err = e.Exec(planner.WithDryRun(ctx, d), s, inner, args...)
	switch {
	case errors.Is(err, planner.ErrDryRun):
	case err != nil:
		return nil, err
	default:
		d.Note("commit", "none: the statement changes no row")
	}
	return e.planner.LinesPlan(ctx, workers, schema, d.Lines())
}
