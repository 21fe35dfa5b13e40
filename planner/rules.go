package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner/plan"
)

// The plans the rules build (rule.go, rule_*.go): scatters, broadcasts,
// two-phase splits and gathers.

// scanOf describes input i for the plan, with its groups and estimates.
func (pb *planBuilder) scanOf(ctx context.Context, i int, in *input) *plan.Scan {
	s := &plan.Scan{Input: i, Table: in.ref.String(), View: in.view, Columns: in.cols,
		Files: len(in.tasks), FilesBefore: int(in.filesBefore), Bytes: in.bytes, BytesBefore: in.bytesBefore,
		Snapshot: snapshotID(in), Metadata: in.pinned.MetadataLocation}
	if in.filter != nil {
		s.Filter, s.FilterRedacted = in.filter.String(), redactedFilter(in.filter)
	}
	s.EstRows, s.RowsNote = pb.p.estimateRows(ctx, in)
	s.EstBytes = in.bytes
	for _, g := range in.groups {
		var grp plan.Group
		seen := map[string]bool{}
		for _, t := range g {
			grp.Files++
			grp.Bytes += t.Length
			if !seen[t.File.FilePath()] {
				seen[t.File.FilePath()] = true
				grp.Rows += t.File.Count()
			}
		}
		s.Groups = append(s.Groups, grp)
	}
	return s
}

// scan is a fresh node for input in; whole makes one fragment instance
// read all its groups.
func (pb *planBuilder) scan(in *input, whole bool) *plan.Scan {
	i := slices.Index(pb.b.inputs, in)
	s := *pb.scans[i]
	s.Whole = whole
	return &s
}

// scatter puts one endpoint per group of in; small inputs are read in full
// by every fragment (broadcast).
func (pb *planBuilder) scatter(in *input, small []*input, sql string) *plan.Result {
	res := &plan.Result{Strategy: plan.Scatter, Label: "scatter"}
	big := pb.scan(in, false)
	f := &plan.Fragment{Role: "scan", SQL: sql, Schema: pb.b.schema, Per: big, Place: plan.PlaceGroups, In: []plan.Node{big}}
	if len(small) > 0 {
		bc, names := pb.broadcast(small)
		res.Label = "scatter with broadcast of " + names
		f.In = append(f.In, bc)
	}
	f.Passthrough = len(small) == 0 && pb.passthrough(in)
	res.Endpoints = []*plan.Fragment{f}
	return res
}

// broadcast is the exchange by which every instance of a fragment reads
// the small inputs whole, and their names for the plan's label.
func (pb *planBuilder) broadcast(small []*input) (*plan.Exchange, string) {
	bc := &plan.Exchange{Kind: plan.ExchangeBroadcast}
	names := make([]string, len(small))
	for i, s := range small {
		names[i] = s.ref.String()
		bc.In = append(bc.In, pb.scan(s, true))
	}
	return bc, strings.Join(names, ", ")
}

// unionAll scatters each branch of a UNION ALL of scatterable SELECTs: the
// endpoints of every branch, each cast to the union's bound schema.
func (pb *planBuilder) unionAll(root node, aggs map[string]bool) (*plan.Result, bool) {
	branches, ok := unionBranches(root)
	if !ok || pb.b.duckTypes == nil {
		return nil, false
	}
	byView := map[string]*input{}
	for _, in := range pb.b.inputs {
		byView[in.view] = in
	}
	names := fieldNames(pb.b.schema)
	var frags []*plan.Fragment
	for i, br := range branches {
		from, _ := br["from_table"].(node)
		if selectScatterReason(br, aggs) != "" || str(from, "type") != "BASE_TABLE" {
			return nil, false
		}
		in := byView[str(from, "table_name")]
		if in == nil {
			return nil, false
		}
		sql, err := pb.deparse(statement(br))
		if err != nil {
			return nil, false
		}
		s := pb.scan(in, false)
		frags = append(frags, &plan.Fragment{Role: fmt.Sprintf("branch %d", i), SQL: castWrap(sql, names, pb.b.duckTypes),
			Schema: pb.b.schema, Per: s, Place: plan.PlaceGroups, In: []plan.Node{s}})
	}
	return &plan.Result{Strategy: plan.Scatter, Label: fmt.Sprintf("scatter (UNION ALL of %d branches)", len(frags)), Endpoints: frags}, true
}

// twoPhase plans partial fragments per group (children) and one final
// endpoint over them. It returns nil when the final step does not bind
// to exactly the query's schema, so the caller gathers instead.
func (pb *planBuilder) twoPhase(ctx context.Context, in *input, small []*input, tp *twoPhase) (*plan.Result, error) {
	ph, err := pb.phases(ctx, tp)
	if err != nil || ph == nil {
		return nil, err
	}
	s := pb.scan(in, false)
	var body plan.Node = s
	label := "two-phase (" + tp.kind + ")"
	if len(small) > 0 {
		bc, names := pb.broadcast(small)
		body = &plan.Join{On: "the query's conditions", In: []plan.Node{s, bc}}
		label += " with broadcast of " + names
	}
	partial := &plan.Fragment{Role: "partial", SQL: ph.partialSQL, Schema: ph.partialSchema, Per: s, Place: plan.PlaceGroups,
		In: []plan.Node{&plan.Aggregate{Phase: plan.Partial, Kind: tp.kind, Rows: tp.partialRows, Global: tp.global, In: body}}}
	return &plan.Result{Strategy: plan.TwoPhase, Label: label, Endpoints: []*plan.Fragment{pb.finalOver(partial, tp, ph)}}, nil
}

// split is how root divides into partials and a final: as an aggregate
// when it aggregates or groups, else by its modifiers (DISTINCT, ORDER BY
// … LIMIT, LIMIT); nil with the reason when it does not.
func (pb *planBuilder) split(root node, aggs map[string]bool) (*twoPhase, string) {
	if exprReason(node{"s": root["select_list"], "h": root["having"], "m": root["modifiers"]}, aggs) != "" || len(anyList(root["group_expressions"])) > 0 {
		return planAggregate(root, aggs)
	}
	return planRowwise(root, fieldNames(pb.b.schema))
}

// finalOver is tp's final step, one instance over every instance of the
// partial fragment (merging their order for a top-n).
func (pb *planBuilder) finalOver(partial *plan.Fragment, tp *twoPhase, ph *phases) *plan.Fragment {
	if n := pb.finalPartitions(partial, tp); n > 1 {
		keys := make([]string, tp.groups)
		for j := range keys {
			keys[j] = engine.Quote(fmt.Sprintf("__g%d", j))
		}
		ex := &plan.Exchange{Kind: plan.ExchangeHash, View: partialsView, Keys: [][]string{keys}, Partitions: n, In: []plan.Node{partial}}
		pb.note("final", "the final aggregate runs in %d partitions of its group keys, each an endpoint", n)
		return &plan.Fragment{Role: "final", SQL: ph.final, Schema: pb.b.schema, Partitions: n, Place: plan.PlacePartitions,
			In: []plan.Node{&plan.Aggregate{Phase: plan.Final, Kind: tp.kind, Rows: tp.finalRows, In: ex}}}
	}
	ex := &plan.Exchange{Kind: plan.ExchangeGather, View: partialsView, In: []plan.Node{partial}}
	if tp.kind == "top-n" {
		ex.Kind, ex.Order = plan.ExchangeMerge, tp.order
	}
	return &plan.Fragment{Role: "final", SQL: ph.final, Schema: pb.b.schema, Place: plan.PlaceAny, ChildLimit: ph.childLimit,
		In: []plan.Node{&plan.Aggregate{Phase: plan.Final, Kind: tp.kind, Rows: tp.finalRows, Global: tp.global, In: ex}}}
}

// finalPartitions is how many fragments a two-phase aggregate's final
// runs as: one per live worker (at most ShufflePartitions) when the
// aggregate groups, keeps no order and no limit, and its input is at
// least ShuffleBytes — a result that may be as large as its input comes
// back as one endpoint per partition of the group keys, which clients
// pull in parallel (each group's partials hash alike, so each group is
// final in one partition); else 1.
func (pb *planBuilder) finalPartitions(partial *plan.Fragment, tp *twoPhase) int {
	// A partial that is itself a hash exchange's consumer keeps one final:
	// its producers' tickets would nest once more per final partition.
	if tp.kind != "aggregate" || tp.groups == 0 || tp.global || tp.finalRows > 0 || pb.plan.Ordered || len(pb.workers) < 2 || partial.Partitions > 0 {
		return 1
	}
	var bytes int64
	plan.Walk(partial, func(n plan.Node) {
		if s, ok := n.(*plan.Scan); ok {
			bytes += s.Bytes
		}
	})
	if limit := pb.p.opts.ShuffleBytes; limit >= 0 && bytes < limit {
		return 1
	}
	return min(len(pb.workers), pb.p.opts.ShufflePartitions)
}

// gatherPlan runs the whole query on one worker, which pulls every
// input's pruned, projected scan fragments from the workers in parallel.
// A query whose inputs fit one group reads them directly.
func (pb *planBuilder) gatherPlan(ctx context.Context, reason string) (*plan.Result, error) {
	res := &plan.Result{Strategy: plan.Gather, Label: "gather (" + reason + ")"}
	f := &plan.Fragment{Role: "gather", SQL: pb.b.sql, Schema: pb.b.schema, Place: plan.PlaceAny}
	res.Endpoints = []*plan.Fragment{f}
	groups := 0
	for _, in := range pb.b.inputs {
		groups += len(in.groups)
	}
	f.Direct = pb.p.readsDirect(pb.b.inputs)
	if groups <= len(pb.b.inputs) || len(pb.workers) == 1 || f.Direct {
		f.Place = plan.PlaceLargest
		for _, in := range pb.b.inputs {
			f.In = append(f.In, pb.scan(in, true))
		}
		return res, nil
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, err
	}
	for _, in := range pb.b.inputs {
		child := "SELECT * FROM " + engine.Quote(in.view)
		viewSchema, err := pb.conn.QuerySchema(ctx, child)
		if err != nil {
			return nil, err
		}
		// A child is a bare SELECT * of its scan: when DuckDB would hand
		// back exactly the types iceberg-go reads, the worker streams the
		// scan without the round trip through DuckDB (passthrough).
		read, err := inputSchema(ctx, in)
		s := pb.scan(in, false)
		c := &plan.Fragment{Role: "child", SQL: child, Schema: viewSchema, Per: s, Place: plan.PlaceGroups,
			Passthrough: err == nil && in.meta == "" && sameSchema(read, viewSchema), In: []plan.Node{s}}
		f.In = append(f.In, &plan.Exchange{Kind: plan.ExchangeGather, View: in.view, In: []plan.Node{c}})
	}
	return res, nil
}

// estimate fills the figures of the nodes above the scans: a bare
// projection of its scan (a passthrough or a gather's child) keeps the
// scan's rows and bytes, an exchange and the result sum their inputs',
// anything else (filters, joins, aggregates) is unknown: the coordinator
// has no statistics to say.
func estimate(n plan.Node) {
	for _, in := range n.Inputs() {
		estimate(in)
	}
	fig := n.Stats()
	switch x := n.(type) {
	case *plan.Scan:
		return
	case *plan.Aggregate:
		fig.EstRows, fig.EstBytes = aggregateRows(x), plan.Unknown
	case *plan.Join:
		fig.EstRows, fig.EstBytes = plan.Unknown, plan.Unknown
	case *plan.Fragment:
		fig.EstRows, fig.EstBytes = plan.Unknown, plan.Unknown
		switch {
		case x.Per != nil && (x.Passthrough || x.Role == "child" || x.Role == "partition"):
			fig.EstRows, fig.EstBytes = x.Per.EstRows, x.Per.EstBytes
		case len(x.In) == 1:
			if a, ok := x.In[0].(*plan.Aggregate); ok {
				fig.EstRows = a.EstRows
			}
		}
	default:
		fig.EstRows, fig.EstBytes = sumFigures(n.Inputs())
	}
}

// aggregateRows estimates the rows of a partial or final step summed over
// its instances: one per instance without group keys, at most its LIMIT
// of each partial's group (or of all partials' rows), else unknown.
func aggregateRows(a *plan.Aggregate) int64 {
	in := a.In.Stats().EstRows
	switch {
	case a.Global && a.Phase == plan.Final:
		return 1
	case a.Global:
		if s, ok := a.In.(*plan.Scan); ok {
			return int64(len(s.Groups))
		}
	case a.Rows > 0 && a.Phase == plan.Partial:
		if s, ok := a.In.(*plan.Scan); ok {
			var n int64
			for _, g := range s.Groups {
				n += min(a.Rows, g.Rows)
			}
			return n
		}
	case a.Rows > 0 && in != plan.Unknown:
		return min(a.Rows, in)
	case a.Rows > 0:
		return a.Rows
	}
	return plan.Unknown
}

func sumFigures(ns []plan.Node) (rows, bytes int64) {
	for _, n := range ns {
		f := n.Stats()
		if f.EstRows == plan.Unknown || rows == plan.Unknown {
			rows = plan.Unknown
		} else {
			rows += f.EstRows
		}
		if f.EstBytes == plan.Unknown || bytes == plan.Unknown {
			bytes = plan.Unknown
		} else {
			bytes += f.EstBytes
		}
	}
	return rows, bytes
}
