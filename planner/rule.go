package planner

import (
	"context"
	"fmt"

	"github.com/icefloe/icefloe/planner/plan"
)

// Rules: a query's strategy is the first rule that applies to it.
//
// Each rule is one pass in a file of its own (rule_<name>.go), with a doc
// comment saying why it exists: what it wins over the rules after it and
// why its plan returns what single-node DuckDB would. A rule reads the
// typed view of the bound query (queryView) and either returns a plan or
// says why it does not apply; the verdicts of the rules tried are kept in
// the plan for EXPLAIN. The guards rules share — a query node, a row-wise
// query, one table, a join, a set operation, no subquery, no CTE, two
// workers — are declared by each rule (Needs) and checked here, in one
// order, with one wording. The last rule, gather, always applies.
//
// planner/testdata/rules/<rule> holds each rule's datadriven cases,
// asserting which rule fired (TestRules).

// A rule is one strategy.
type rule interface {
	// Name is the rule's name in EXPLAIN's verdicts and in its test file
	// (spaces as underscores).
	Name() string
	// Needs are the guards choose checks before Apply.
	Needs() guards
	// Apply plans q, or says why not.
	Apply(ctx context.Context, pb *planBuilder, q *queryView) (outcome, error)
}

// rules are the strategies in the order they are tried.
var rules = []rule{
	scatterRule{},
	broadcastRule{},
	broadcastSubqueriesRule{},
	unionAllRule{},
	shuffleSetOpRule{},
	shuffleJoinRule{},
	shuffleStagesRule{},
	oneGroupRule{},
	twoPhaseRule{},
	broadcastTwoPhaseRule{},
	shuffleGroupedRule{},
	gatherRule{},
}

// guards are preconditions rules share, as bits.
type guards uint16

const (
	// needQuery: the statement has a query node.
	needQuery guards = 1 << iota
	// needRowwise: the query over all rows is the union of the query over
	// parts of its FROM (selectScatterReason).
	needRowwise
	// needOneTable: a SELECT from one base table.
	needOneTable
	// needJoin: a SELECT whose FROM is a join.
	needJoin
	// needSetOp: a set operation (UNION, INTERSECT, EXCEPT).
	needSetOp
	// needNoSubquery: no subquery anywhere: it could read a large input
	// of which a fragment holds only a part.
	needNoSubquery
	// needNoCTE: no common table expression, for the same reason.
	needNoCTE
	// needWorkers: at least two live workers (a shuffle).
	needWorkers
)

// refused is why q fails the first of g it does not meet, "" when it
// meets them all.
func (q *queryView) refused(g guards, workers int) string {
	switch {
	case g&needQuery != 0 && q.root == nil:
		return "no query node"
	case g&needRowwise != 0 && q.scatter != "":
		return q.scatter
	case g&needOneTable != 0 && (q.tables != 1 || q.Type != "SELECT_NODE" || q.From.Type != "BASE_TABLE"):
		return "not a select from one table"
	case g&needJoin != 0 && (q.Type != "SELECT_NODE" || q.From.Type != "JOIN"):
		return "not a join"
	case g&needSetOp != 0 && q.Type != "SET_OPERATION_NODE":
		return "not a set operation"
	case g&needNoSubquery != 0 && q.subquery:
		return "subquery"
	case g&needNoCTE != 0 && q.CTEs > 0:
		return "common table expression"
	case g&needWorkers != 0 && workers < 2:
		return "one worker"
	}
	return ""
}

// outcome is what a rule says: a plan, or why not. blame makes why the
// reason the query gathers, when no later rule says better.
type outcome struct {
	res   *plan.Result
	why   string
	blame bool
}

// no is a rule's refusal.
func no(why string) (outcome, error) { return outcome{why: why}, nil }

// blame is a rule's refusal that explains why the query gathers.
func blame(why string) (outcome, error) { return outcome{why: why, blame: true}, nil }

// applied is a rule's plan, with why it applies.
func applied(res *plan.Result, why string) (outcome, error) { return outcome{res: res, why: why}, nil }

// notShuffled is a shuffle rule's refusal: it adds to why the query
// gathers.
func notShuffled(q *queryView, why string) (outcome, error) {
	return blame(q.why + "; not shuffled: " + why)
}

// choose picks the strategy from the query's shape and table sizes: the
// first rule that applies.
func (pb *planBuilder) choose(ctx context.Context, root node) (*plan.Result, error) {
	aggs, err := pb.p.aggregates.load(ctx, pb.conn)
	if err != nil {
		return nil, err
	}
	pb.scans = make([]*plan.Scan, len(pb.b.inputs))
	for i, in := range pb.b.inputs {
		pb.scans[i] = pb.scanOf(ctx, i, in)
	}
	q := viewOf(root, aggs, len(pb.b.inputs))
	var verdicts []plan.Verdict
	for _, r := range rules {
		o, err := pb.try(ctx, r, q)
		if err != nil {
			return nil, err
		}
		if o.res != nil {
			o.res.Verdicts = append(verdicts, plan.Verdict{Rule: r.Name(), Applied: true, Reason: o.why})
			o.res.Ordered = pb.plan.Ordered
			estimate(o.res)
			return o.res, nil
		}
		verdicts = append(verdicts, plan.Verdict{Rule: r.Name(), Reason: o.why})
		if o.blame {
			q.why = o.why
		}
	}
	return nil, fmt.Errorf("planner: no rule applies") // gather always does
}

// try checks r's guards, then applies it.
func (pb *planBuilder) try(ctx context.Context, r rule, q *queryView) (outcome, error) {
	if why := q.refused(r.Needs(), len(pb.workers)); why != "" {
		return no(why)
	}
	return r.Apply(ctx, pb, q)
}
