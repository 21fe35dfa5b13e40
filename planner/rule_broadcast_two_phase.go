package planner

import (
	"context"
	"fmt"
)

// broadcastTwoPhaseRule: an aggregate, top-n, LIMIT or DISTINCT over a
// join of one large table with small ones splits as over the one table:
// each partial joins one group of it with the small tables whole (as a
// broadcast scatter does), the final combines the partials. The join's
// rows are the union of the partials' joins, each row in one of them.
type broadcastTwoPhaseRule struct{}

func (broadcastTwoPhaseRule) Name() string { return "broadcast two-phase" }
func (broadcastTwoPhaseRule) Needs() guards {
	return needQuery | needJoin | needNoSubquery | needNoCTE
}

func (broadcastTwoPhaseRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	big, small, ok := pb.broadcastable(q.From.raw)
	switch {
	case !ok:
		return no("join of large tables")
	case big.refs != 1 || big.meta != "":
		return no(fmt.Sprintf("%s is not a plain table read once", big.ref))
	case len(big.groups) < 2:
		return no(fmt.Sprintf("%s is one group", big.ref))
	case big.bytes <= pb.p.opts.BroadcastBytes:
		// Every table is small: one worker reads them all at less cost
		// than partials and a final.
		return no(fmt.Sprintf("every table is at most the broadcast size %d", pb.p.opts.BroadcastBytes))
	}
	if why, over := pb.broadcastOverShare(ctx, small); over {
		return no(why)
	}
	tp, why := pb.split(q.root, q.aggs)
	if tp == nil {
		return no(why)
	}
	res, err := pb.twoPhase(ctx, big, small, tp)
	if err != nil {
		return outcome{}, err
	}
	if res == nil {
		return no("two-phase final does not bind to the query's schema")
	}
	return applied(res, fmt.Sprintf("%s splits over %s's groups, the other tables broadcast", tp.kind, big.ref))
}
