package planner

import "context"

// broadcastRule: a row-wise join of one large table with small ones is the
// union of the join of each group of the large table with the small ones
// whole (a join distributes over a split of its preserved side, and of
// either side of an inner join). Each small table is read by every
// fragment: cheaper than moving the large one while the small ones are
// under broadcast_bytes.
type broadcastRule struct{}

func (broadcastRule) Name() string  { return "broadcast" }
func (broadcastRule) Needs() guards { return needQuery | needRowwise | needJoin }

func (broadcastRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	in, small, ok := pb.broadcastable(q.From.raw)
	if !ok {
		return blame("join of large tables")
	}
	if why, over := pb.broadcastOverShare(ctx, small); over {
		return blame(why)
	}
	return applied(pb.scatter(in, small, pb.b.sql), "every table but the leftmost is small")
}
