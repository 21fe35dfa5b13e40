package planner

import (
	"context"
	"strings"
)

// unionAllRule: a UNION ALL is the concatenation of its branches, so a
// UNION ALL of row-wise single-table SELECTs scatters each branch, every
// endpoint cast to the union's bound types (a branch alone may bind
// narrower ones).
type unionAllRule struct{}

func (unionAllRule) Name() string  { return "union all" }
func (unionAllRule) Needs() guards { return needSetOp }

func (unionAllRule) Apply(_ context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, ok := pb.unionAll(q.root, q.aggs)
	if !ok {
		return blame(strings.ToLower(q.SetOp) + " (not a scatterable UNION ALL)")
	}
	return applied(res, "every branch is a row-wise select from one table")
}
