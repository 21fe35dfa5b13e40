package planner

import "context"

// gatherRule: the query runs whole on one worker, which pulls every
// input's pruned, projected scan from the workers in parallel. It always
// applies, so every query has a plan; its reason is why no rule before it
// did.
type gatherRule struct{}

func (gatherRule) Name() string  { return "gather" }
func (gatherRule) Needs() guards { return 0 }

func (gatherRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, err := pb.gatherPlan(ctx, q.why)
	return outcome{res: res, why: q.why}, err
}
