package planner

import "context"

// scatterRule: a row-wise SELECT from one table is the union of the same
// SELECT over each group of the table's files, so each group is an
// endpoint of its own and nothing meets on one worker; clients pull the
// groups in parallel. It is first because no plan moves fewer rows.
type scatterRule struct{}

func (scatterRule) Name() string  { return "scatter" }
func (scatterRule) Needs() guards { return needQuery | needRowwise | needOneTable }

func (scatterRule) Apply(_ context.Context, pb *planBuilder, _ *queryView) (outcome, error) {
	return applied(pb.scatter(pb.b.inputs[0], nil, pb.b.sql), "a row-wise select from one table")
}
