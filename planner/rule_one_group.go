package planner

import (
	"context"
	"fmt"
)

// oneGroupRule: partials and a final over one group would only add a hop,
// so a query over one group runs whole where the group's files are.
type oneGroupRule struct{}

func (oneGroupRule) Name() string  { return "one group" }
func (oneGroupRule) Needs() guards { return needQuery }

func (oneGroupRule) Apply(ctx context.Context, pb *planBuilder, _ *queryView) (outcome, error) {
	switch {
	case len(pb.b.inputs) != 1:
		return no(fmt.Sprintf("%d tables", len(pb.b.inputs)))
	case len(pb.b.inputs[0].groups) != 1:
		return no(fmt.Sprintf("%d groups", len(pb.b.inputs[0].groups)))
	}
	res, err := pb.gatherPlan(ctx, "one group")
	return outcome{res: res, why: "one group"}, err
}
