package planner

import "context"

// shuffleGroupedRule: a query over one large table that two-phase cannot
// split (count(DISTINCT), median, windows partitioned by one column) falls
// into independent parts by one column; hash partitions of that column
// keep each group whole in one fragment (shufflegroup.go).
type shuffleGroupedRule struct{}

func (shuffleGroupedRule) Name() string  { return "shuffle grouped" }
func (shuffleGroupedRule) Needs() guards { return needQuery | needOneTable }

func (shuffleGroupedRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, why, err := pb.shuffleGrouped(ctx, q.root, q.aggs)
	if err != nil || res != nil {
		return outcome{res: res, why: "grouped query shuffles"}, err
	}
	return notShuffled(q, why)
}
