package statement

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// The tests send text, as clients do: these parse it once and run the
// statement value, as flightsql does.

func run(ctx context.Context, x *Executor, sess planner.Session, q string, args ...any) (int64, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return 0, err
	}
	return x.Exec(ctx, sess, st, args...)
}

func runBatch(ctx context.Context, x *Executor, sess planner.Session, q string, recs []arrow.RecordBatch) (int64, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return 0, err
	}
	return x.ExecBatch(ctx, sess, st, recs)
}

func planText(ctx context.Context, x *Executor, sess planner.Session, q string, args ...any) (*planner.Plan, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return nil, err
	}
	return x.Plan(ctx, sess, st, args...)
}

func parameters(ctx context.Context, x *Executor, sess planner.Session, q string) (*arrow.Schema, error) {
	st, err := parse.Parse(q)
	if err != nil {
		return nil, err
	}
	return x.Parameters(ctx, sess, st)
}
