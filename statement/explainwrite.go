package statement

import (
	"context"
	"errors"
	"strings"

	"github.com/icefloe/icefloe/planner"
)

// Plan plans query as the planner does, except `EXPLAIN <write>`
// (planner.ExplainedWrite), which it answers itself: it runs the write as
// a dry run and plans the lines noted as the EXPLAIN's rows. args bind
// the query's parameters (see planner.Planner.Plan).
func (e *Executor) Plan(ctx context.Context, s planner.Session, query string, args ...any) (*planner.Plan, error) {
	inner, ok := planner.ExplainedWrite(query)
	if !ok {
		return e.Planner.Plan(ctx, s, query, args...)
	}
	workers, err := e.LiveWorkers()
	if err != nil {
		return nil, err
	}
	return e.explainWrite(ctx, s, query, inner, workers)
}

// explainWrite answers EXPLAIN of an INSERT, UPDATE, DELETE, MERGE,
// TRUNCATE or CREATE TABLE … AS (inner, the statement of query): the plan
// of its reads, its write fragments and its commit, without writing
// anything.
func (e *Executor) explainWrite(ctx context.Context, s planner.Session, query, inner string, workers []planner.Worker) (*planner.Plan, error) {
	schema, err := e.Bind(ctx, s, query)
	if err != nil {
		return nil, err
	}
	d := &planner.DryRun{}
	d.Note("statement", "%s", strings.TrimSpace(inner))
	_, err = e.Exec(planner.WithDryRun(ctx, d), s, inner)
	switch {
	case errors.Is(err, planner.ErrDryRun):
	case err != nil:
		return nil, err
	default:
		d.Note("commit", "none: the statement changes no row")
	}
	return e.LinesPlan(ctx, workers, schema, d.Lines())
}
