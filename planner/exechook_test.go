package planner_test

import (
	"context"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/statement"
)

// The statements the tests of package planner set their tables up with
// run in package statement, over the planner under test.
func init() {
	planner.ExecHook = func(ctx context.Context, p *planner.Planner, sess planner.Session, query string, args ...any) (int64, error) {
		st, err := parse.Parse(query)
		if err != nil {
			return 0, err
		}
		return statement.New(p).Exec(ctx, sess, st, args...)
	}
}
