package planner

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/parse"
)

// The tests send text, as clients do: these parse it once and plan or
// bind the statement value, as flightsql does.

func planText(ctx context.Context, p *Planner, s Session, q string, args ...any) (*Plan, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return nil, err
	}
	return p.Plan(ctx, s, st, args...)
}

func bindText(ctx context.Context, p *Planner, s Session, q string, args ...any) (*arrow.Schema, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return nil, err
	}
	return p.Bind(ctx, s, st, args...)
}
