package planner

import "context"

// shuffleSetOpRule: UNION, INTERSECT and EXCEPT compare whole rows, and
// equal rows hash alike, so the set operation over all rows is the union
// of the set operation over each hash partition of its branches' rows.
// It spreads a set operation too large for one worker over all of them.
type shuffleSetOpRule struct{}

func (shuffleSetOpRule) Name() string  { return "shuffle set operation" }
func (shuffleSetOpRule) Needs() guards { return needSetOp }

func (shuffleSetOpRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, why, err := pb.shuffleSetOp(ctx, q.root)
	if err != nil || res != nil {
		return outcome{res: res, why: "set operation shuffles"}, err
	}
	return notShuffled(q, why)
}
