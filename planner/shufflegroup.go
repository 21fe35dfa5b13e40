package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner/plan"
)

// Shuffled single-table queries.
//
// A query over one large table that two-phase cannot split — a GROUP BY
// with count(DISTINCT), median or another aggregate that does not
// decompose; window functions that all PARTITION BY one column — falls
// into independent parts by one column: a GROUP BY key, or the window
// partition column every window shares. Partition j of N is every group's
// rows whose column hashes to j (children as in shuffle.go), so every
// group, or window partition, is whole in one fragment, and the query
// over the table is the union of the query over the partitions. DISTINCT,
// ORDER BY … LIMIT and LIMIT split as for a scatter (splitModifiers): each
// fragment applies what it can, a final merges.

// shuffleGrouped plans root over its one input as partitions of its
// group (or window partition) column, when the table is at least
// ShuffleBytes and the query allows it; it says why not otherwise.
func (pb *planBuilder) shuffleGrouped(ctx context.Context, root node, aggs map[string]bool) (*plan.Result, string, error) {
	if len(pb.workers) < 2 {
		return nil, "one worker", nil
	}
	in := pb.b.inputs[0]
	from, _ := root["from_table"].(node)
	switch {
	case in.refs != 1 || in.meta != "" || from["sample"] != nil || root["sample"] != nil || len(anyList(from["column_name_alias"])) > 0:
		return nil, "not a plain table read once", nil
	case hasSubquery(root):
		return nil, "subquery", nil
	}
	if hasCTE(root) {
		return nil, "common table expression", nil
	}
	if limit := pb.p.opts.ShuffleBytes; limit >= 0 && in.bytes < limit {
		return nil, fmt.Sprintf("%s is %d bytes, below the shuffle size %d", in.ref, in.bytes, limit), nil
	}
	w := &joinWalk{pb: pb, ctx: ctx, leaves: []*input{in}}
	col, kind, why := groupColumn(w, root, aggs)
	var tp *twoPhase
	if col == "" {
		if col, tp = distinctCounts(w, root); col == "" {
			return nil, why, nil
		}
		kind, why = "count(DISTINCT)", ""
	} else {
		tp, why = splitModifiers(root, fieldNames(pb.b.schema))
	}
	sj := &shuffleJoin{sides: []shuffleSide{{in: in, col: col, hash: engine.Quote(col)}}}
	pushedWhere(w, root, sj)
	n := min(len(pb.workers), pb.p.opts.ShufflePartitions)
	if tp == nil && why != "nothing to split" {
		return nil, why, nil
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, "", err
	}
	return pb.shufflePartitioned(ctx, sj, n, kind, tp)
}

// shufflePartitioned plans the query over n partitions of sj: the union of
// the partitions when tp is nil (row-wise), else tp's partials per
// partition and its final over them. It returns nil with a reason when
// the final does not bind to the query's schema.
func (pb *planBuilder) shufflePartitioned(ctx context.Context, sj *shuffleJoin, n int, kind string, tp *twoPhase) (*plan.Result, string, error) {
	if tp == nil {
		res, err := pb.shufflePlan(ctx, sj, n, pb.noteGrouped(ctx, sj, n, kind, "row-wise"), nil, nil)
		return res, "", err
	}
	ph, err := pb.phases(ctx, tp)
	if err != nil || ph == nil {
		return nil, "final does not bind to the query's schema", err
	}
	res, err := pb.shufflePlan(ctx, sj, n, pb.noteGrouped(ctx, sj, n, kind, ph.kind), tp, ph)
	return res, "", err
}

func (pb *planBuilder) noteGrouped(ctx context.Context, sj *shuffleJoin, n int, kind, split string) string {
	s := sj.sides[0]
	label := fmt.Sprintf("shuffle %s (%s partitioned on %s in %d partitions)", split, kind, s.col, n)
	pb.note("strategy", "%s", label)
	pb.note("estimate", "%s: %d bytes, %s; shuffle from %d bytes", s.in.ref, s.in.bytes, pb.p.rowsNote(ctx, s.in), max(pb.p.opts.ShuffleBytes, 0))
	pb.notePartitions(sj, n)
	return label
}

// groupColumn is the column root's rows fall into independent parts by:
// a plain column among its GROUP BY keys, or one every window function
// partitions by.
func groupColumn(w *joinWalk, root node, aggs map[string]bool) (col, kind, why string) {
	if root["qualify"] != nil {
		return "", "", "qualify"
	}
	above := node{"s": root["select_list"], "h": root["having"], "m": root["modifiers"]}
	if groups := anyList(root["group_expressions"]); len(groups) > 0 {
		if len(anyList(root["group_sets"])) > 1 || str(root, "aggregate_handling") != "STANDARD_HANDLING" {
			return "", "", "grouping sets"
		}
		if exprReason(above, nil) == "window function" {
			return "", "", "window function over groups"
		}
		aliases := map[string]bool{}
		items := anyList(root["select_list"])
		for _, it := range items {
			if a := str(asNode(it), "alias"); a != "" {
				aliases[strings.ToLower(a)] = true
			}
		}
		for _, g := range groups {
			gn, _ := g.(node)
			if i, ok := intConstant(gn); ok && i >= 1 && int(i) <= len(items) {
				gn, _ = items[i-1].(node)
			}
			if parts := anyList(gn["column_names"]); len(parts) == 1 {
				if name, _ := parts[0].(string); aliases[strings.ToLower(name)] {
					continue // a select alias, not surely the column
				}
			}
			if in, c := w.column(gn); in != nil {
				return c, "group by", ""
			}
		}
		return "", "", "no group key is a plain column"
	}
	// Windows, all partitioned by one column; no aggregate outside them.
	var windows []node
	agg := false
	walk(above, func(n node) bool {
		if str(n, "class") == "WINDOW" {
			windows = append(windows, n)
			return false
		}
		if str(n, "class") == "FUNCTION" && aggs[strings.ToLower(str(n, "function_name"))] {
			agg = true
		}
		return true
	})
	if agg || len(windows) == 0 {
		return "", "", "no group key"
	}
	count := map[string]int{}
	for _, win := range windows {
		seen := map[string]bool{}
		for _, p := range anyList(win["partitions"]) {
			pn, _ := p.(node)
			if in, c := w.column(pn); in != nil && !seen[c] {
				seen[c] = true
				count[c]++
			}
		}
	}
	for c, k := range count {
		if k == len(windows) && (col == "" || c < col) {
			col = c
		}
	}
	if col == "" {
		return "", "", "windows share no PARTITION BY column"
	}
	return col, "window", ""
}

// distinctCounts splits a global aggregate whose DISTINCT aggregates all
// count one column c — SELECT count(DISTINCT c), count(*), sum(x), … —
// over partitions of c: each partition counts its own distinct values,
// disjoint from the others', so the final sums the counts (and sums,
// mins or maxes the plain count, sum, min and max). It returns c and the
// split, or "" when the query is not of that shape.
func distinctCounts(w *joinWalk, root node) (string, *twoPhase) {
	if len(anyList(root["group_expressions"])) > 0 || root["having"] != nil || root["qualify"] != nil || len(anyList(root["modifiers"])) > 0 {
		return "", nil
	}
	partial := clone(root)
	var finals []string
	col := ""
	for i, it := range anyList(partial["select_list"]) {
		f := asNode(it)
		name := strings.ToLower(str(f, "function_name"))
		if str(f, "class") != "FUNCTION" || f["filter"] != nil || len(anyList(asNode(f["order_bys"])["orders"])) > 0 {
			return "", nil
		}
		re := map[string]string{"count": "sum", "count_star": "sum", "sum": "sum", "min": "min", "max": "max"}[name]
		if f["distinct"] == true {
			args := anyList(f["children"])
			if name != "count" || len(args) != 1 {
				return "", nil
			}
			in, c := w.column(asNode(args[0]))
			if in == nil || (col != "" && c != col) {
				return "", nil
			}
			col, re = c, "sum"
		}
		if re == "" {
			return "", nil
		}
		a := fmt.Sprintf("__a%d", i)
		withAlias(f, a)
		finals = append(finals, fmt.Sprintf("%s(%s)", re, a))
	}
	if col == "" {
		return "", nil
	}
	final := "SELECT " + strings.Join(finals, ", ") + " FROM " + partialsView
	return col, &twoPhase{kind: "aggregate", partial: partial, final: final, wrap: true}
}

func asNode(v any) node {
	n, _ := v.(node)
	return n
}

// shuffleSetOp plans UNION (distinct), INTERSECT or EXCEPT of two
// row-wise SELECTs over one table each as partitions of each branch's
// first column: equal rows have equal first columns, so they meet in one
// fragment (NULLs too, as set operations take them as equal).
func (pb *planBuilder) shuffleSetOp(ctx context.Context, root node) (*plan.Result, string, error) {
	if len(pb.workers) < 2 {
		return nil, "one worker", nil
	}
	if hasCTE(root) {
		return nil, "common table expression", nil
	}
	if str(root, "setop_type") == "UNION" && root["setop_all"] == true {
		return nil, "union all", nil
	}
	byView := map[string]*input{}
	for _, in := range pb.b.inputs {
		byView[in.view] = in
	}
	var sides []shuffleSide
	var total int64
	for _, k := range []string{"left", "right"} {
		br, _ := root[k].(node)
		in, col, why := pb.branchColumn(ctx, br, byView)
		if in == nil {
			return nil, why, nil
		}
		if len(sides) == 1 && sides[0].in == in {
			if sides[0].col != col {
				return nil, "one table partitioned on two columns", nil
			}
			continue
		}
		sides = append(sides, shuffleSide{in: in, col: col})
		total += in.bytes
	}
	if len(sides) != len(pb.b.inputs) {
		return nil, "tables outside the branches", nil
	}
	if limit := pb.p.opts.ShuffleBytes; limit >= 0 && total < limit {
		return nil, fmt.Sprintf("the branches read %d bytes, below the shuffle size %d", total, limit), nil
	}
	if err := pb.b.loadStandIns(ctx, pb.conn); err != nil {
		return nil, "", err
	}
	kind := strings.ToLower(str(root, "setop_type"))
	sj := &shuffleJoin{sides: sides, setOp: kind}
	if len(sides) == 1 {
		sides[0].hash = engine.Quote(sides[0].col)
	} else if why := pb.shuffleKeys(ctx, sj); why != "" {
		return nil, why, nil
	}
	n := min(len(pb.workers), pb.p.opts.ShufflePartitions)
	tp, why := splitModifiers(root, fieldNames(pb.b.schema))
	if tp == nil && why != "nothing to split" {
		return nil, why, nil
	}
	return pb.shufflePartitioned(ctx, sj, n, kind, tp)
}

// branchColumn is a set operation branch's one input and the column its
// first output is: the branch must be a row-wise SELECT of one table.
func (pb *planBuilder) branchColumn(ctx context.Context, br node, byView map[string]*input) (*input, string, string) {
	from, _ := br["from_table"].(node)
	if str(br, "type") != "SELECT_NODE" || str(from, "type") != "BASE_TABLE" || selectScatterReason(br, nil) != "" || hasSubquery(br) {
		return nil, "", "a branch is not a row-wise select of one table"
	}
	in := byView[str(from, "table_name")]
	if in == nil || in.meta != "" || from["sample"] != nil || len(anyList(from["column_name_alias"])) > 0 {
		return nil, "", "a branch is not a plain table"
	}
	items := anyList(br["select_list"])
	if len(items) == 0 {
		return nil, "", "a branch selects nothing"
	}
	first := asNode(items[0])
	if str(first, "class") == "STAR" {
		if str(first, "relation_name") != "" || first["columns"] == true || first["expr"] != nil ||
			len(anyList(first["exclude_list"])) > 0 || len(anyList(first["qualified_exclude_list"])) > 0 ||
			len(anyList(first["replace_list"])) > 0 || len(anyList(first["rename_list"])) > 0 {
			return nil, "", "a branch's star is not plain"
		}
		sch, err := inputSchema(ctx, in)
		if err != nil || sch.NumFields() == 0 {
			return nil, "", "a branch's table has no columns"
		}
		return in, sch.Field(0).Name, ""
	}
	w := &joinWalk{pb: pb, ctx: ctx, leaves: []*input{in}}
	if got, col := w.column(first); got == in {
		return in, col, ""
	}
	return nil, "", "a branch's first column is not a column of its table"
}
