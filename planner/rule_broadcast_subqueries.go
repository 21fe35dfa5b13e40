package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// broadcastSubqueriesRule: a row-wise query whose subqueries (in its
// select list or WHERE) read only small tables, none of them the table its
// FROM is split on, is still the union of the query over the split
// table's groups: every fragment reads the small tables whole, so each
// subquery — correlated or not — answers in every fragment what it
// answers over all rows. Without it any subquery gathered.
type broadcastSubqueriesRule struct{}

func (broadcastSubqueriesRule) Name() string  { return "broadcast subqueries" }
func (broadcastSubqueriesRule) Needs() guards { return needQuery | needNoCTE }

func (broadcastSubqueriesRule) Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error) {
	if !q.subquery || q.Type != "SELECT_NODE" {
		return no("no subquery")
	}
	if why := selectScatterReason(withoutSubqueries(q.root), q.aggs); why != "" {
		return no(why)
	}
	if volatileCall(q.root) {
		// Each fragment would draw its own values where the query draws
		// once.
		return no("volatile function")
	}
	from := q.From.raw
	leaves, ok := joinLeaves(from)
	if !ok || len(leaves) == 0 {
		return no("not a join of tables")
	}
	big, small, ok := pb.splitInput(from, leaves)
	switch {
	case !ok:
		return no("join of large tables")
	case big.refs != 1 || big.meta != "":
		return no(fmt.Sprintf("%s is read by a subquery or more than once", big.ref))
	}
	for _, in := range pb.b.inputs {
		if in != big && !slices.Contains(small, in) {
			small = append(small, in)
		}
	}
	for _, in := range small {
		if pb.large(ctx, in) {
			return no(fmt.Sprintf("subquery reads the large table %s", in.ref))
		}
	}
	return applied(pb.scatter(big, small, pb.b.sql), fmt.Sprintf("the subqueries read small tables, broadcast; %s splits", big.ref))
}

// withoutSubqueries is root with each subquery expression a constant: what
// is left for selectScatterReason to judge. A subquery in FROM stays.
func withoutSubqueries(root node) node {
	c := clone(root)
	walk(c, func(n node) bool {
		if str(n, "class") == "SUBQUERY" {
			replaceNode(n, stringConst(""))
			return false
		}
		return true
	})
	return c
}

// volatileCall tells whether a volatile function is called under n.
func volatileCall(n node) bool {
	found := false
	walk(n, func(x node) bool {
		found = found || str(x, "class") == "FUNCTION" && volatile[strings.ToLower(str(x, "function_name"))]
		return !found
	})
	return found
}
