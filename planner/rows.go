package planner

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// A statement whose rows the coordinator computes itself (CALL, which
// package statement runs) is answered as a query over those rows, planned
// like an EXPLAIN: one endpoint whose worker returns them. The rows come as
// a query icefloe printed (literals cast to the result's types), never as
// client text.

// RowsSchema is the result schema of rows, a query over computed rows.
func (p *Planner) RowsSchema(ctx context.Context, rows string) (*arrow.Schema, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.QuerySchema(ctx, rows)
}

// PlanRows plans rows, a query over computed rows, as one endpoint on a
// live worker.
func (p *Planner) PlanRows(ctx context.Context, rows string) (*Plan, error) {
	workers, err := p.LiveWorkers()
	if err != nil {
		return nil, err
	}
	schema, err := p.RowsSchema(ctx, rows)
	if err != nil {
		return nil, err
	}
	return p.rowsPlan(ctx, workers, schema, rows, "the procedure's rows")
}
