package planner

import "context"

// twoPhaseRule: an aggregate whose functions decompose (sum of sums, …), a
// top-n, a LIMIT or a DISTINCT over one table runs as partials per group
// and one final over the partials: each group's rows are reduced where
// they are read, and only the partials' rows meet.
type twoPhaseRule struct{}

func (twoPhaseRule) Name() string  { return "two-phase" }
func (twoPhaseRule) Needs() guards { return needQuery | needOneTable }

func (twoPhaseRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	tp, why := pb.split(q.root, q.aggs)
	if tp == nil {
		return blame(why)
	}
	res, err := pb.twoPhase(ctx, pb.b.inputs[0], nil, tp)
	if err != nil {
		return outcome{}, err
	}
	if res == nil {
		return blame("two-phase final does not bind to the query's schema")
	}
	return applied(res, tp.kind+" splits into partials and a final")
}
