package planner

import "context"

// shuffleJoinRule: a join of two large tables on an equality is the union
// of the join of their rows in each hash partition of the key (rows with
// equal keys hash alike, so every match of a row is in its partition).
// Each worker then builds the hash table of one partition instead of one
// worker building all of it (shuffle.go).
type shuffleJoinRule struct{}

func (shuffleJoinRule) Name() string  { return "shuffle join" }
func (shuffleJoinRule) Needs() guards { return needJoin }

func (shuffleJoinRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	res, why, err := pb.shuffle(ctx, q.root, q.aggs)
	if err != nil || res != nil {
		return outcome{res: res, why: "join shuffles"}, err
	}
	return notShuffled(q, why)
}
