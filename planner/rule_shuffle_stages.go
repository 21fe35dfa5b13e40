package planner

import "context"

// shuffleStagesRule: an inner join of three or more large tables would
// gather on one worker, the shuffle join taking two. Joined stage after
// stage, each join hash-partitioned on its own keys, every worker holds
// one partition of each join's build side instead of one worker all of
// them (shufflestages.go says why the rows are the query's).
type shuffleStagesRule struct{}

func (shuffleStagesRule) Name() string { return "shuffle stages" }
func (shuffleStagesRule) Needs() guards {
	return needQuery | needJoin | needNoSubquery | needNoCTE | needWorkers
}

func (shuffleStagesRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, why, err := pb.shuffleStages(ctx, q)
	if err != nil || res != nil {
		return outcome{res: res, why: "the joins shuffle stage after stage"}, err
	}
	return no(why)
}
