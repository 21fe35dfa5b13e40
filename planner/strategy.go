package planner

import (
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
)

// partialsView is the table a final fragment reads its children's rows from.
const partialsView = "__icefloe_partials"

// twoPhase is a query split into a partial fragment run per group and a
// final fragment over the partials. final is SQL text; partial an AST.
type twoPhase struct {
	kind    string // "aggregate", "top-n", "limit", "distinct"
	partial node
	final   string // over partialsView
	// finalAST, when set, is the final step as an AST (aggregates), to be
	// deparsed and cast to the bound schema.
	finalAST node
	wrap     bool
	// childLimit is how many partial rows are enough (LIMIT alone).
	childLimit int64
	// order are the final's ORDER BY keys (top-n).
	order string
	// partialRows and finalRows cap the rows a partial and the final
	// return (LIMIT; 0: no cap); global: no group keys, one row each.
	partialRows, finalRows int64
	global                 bool
	// groups is how many group keys an aggregate has: the partial's
	// columns __g0, __g1, ….
	groups int
}

// selectScatterReason says why a SELECT node is not row-wise: the query
// over all rows is not the union of the query over parts of its FROM.
func selectScatterReason(sel node, aggregates map[string]bool) string {
	if t := str(sel, "type"); t != "SELECT_NODE" {
		return strings.ToLower(t)
	}
	if mods, _ := sel["modifiers"].([]any); len(mods) > 0 {
		m, _ := mods[0].(node)
		return strings.ToLower(str(m, "type"))
	}
	if m, _ := sel["cte_map"].(node); m != nil {
		if list, _ := m["map"].([]any); len(list) > 0 {
			return "common table expression"
		}
	}
	for _, k := range []string{"group_expressions", "group_sets"} {
		if l, _ := sel[k].([]any); len(l) > 0 {
			return "group by"
		}
	}
	for _, k := range []string{"having", "qualify", "sample"} {
		if sel[k] != nil {
			return k
		}
	}
	if str(sel, "aggregate_handling") != "STANDARD_HANDLING" {
		return "group by all"
	}
	return exprReason(sel, aggregates)
}

// exprReason finds windows, subqueries and aggregates anywhere under n.
// When there are several, the reason is the same in every run (the AST's
// maps are walked in random order): a window before a subquery in FROM
// before a subquery before an aggregate, aggregates by name.
func exprReason(n node, aggregates map[string]bool) string {
	reason := ""
	note := func(r string) {
		if reason == "" || reasonRank(r) < reasonRank(reason) || reasonRank(r) == reasonRank(reason) && r < reason {
			reason = r
		}
	}
	walk(n, func(x node) bool {
		switch str(x, "class") {
		case "WINDOW":
			note("window function")
		case "SUBQUERY":
			note("subquery")
		case "FUNCTION":
			if aggregates[strings.ToLower(str(x, "function_name"))] {
				note("aggregate " + str(x, "function_name"))
			}
		}
		if isTableRef(x) && str(x, "type") == "SUBQUERY" {
			note("subquery in FROM")
		}
		return true
	})
	return reason
}

func reasonRank(r string) int {
	switch r {
	case "window function":
		return 0
	case "subquery in FROM":
		return 1
	case "subquery":
		return 2
	}
	return 3
}

// joinLeaves returns the base tables of a join tree, leftmost first, and
// whether every join keeps each row of the leftmost table's side separate:
// inner, left, semi and anti joins with plain conditions.
func joinLeaves(from node) ([]node, bool) {
	switch str(from, "type") {
	case "BASE_TABLE":
		return []node{from}, from["sample"] == nil
	case "JOIN":
		jt, rt := str(from, "join_type"), str(from, "ref_type")
		okJoin := (jt == "INNER" || jt == "LEFT" || jt == "SEMI" || jt == "ANTI") && (rt == "REGULAR" || rt == "CROSS")
		l, _ := from["left"].(node)
		r, _ := from["right"].(node)
		ll, lok := joinLeaves(l)
		rl, rok := joinLeaves(r)
		if cond, _ := from["condition"].(node); cond != nil && exprReason(cond, nil) != "" {
			okJoin = false
		}
		return append(ll, rl...), okJoin && lok && rok
	}
	return nil, false
}

// unionBranches flattens a UNION ALL tree into its SELECT branches; ok is
// false for anything else (UNION, INTERSECT, EXCEPT, modifiers, CTEs).
func unionBranches(n node) ([]node, bool) {
	switch str(n, "type") {
	case "SELECT_NODE":
		return []node{n}, true
	case "SET_OPERATION_NODE":
		if str(n, "setop_type") != "UNION" || n["setop_all"] != true {
			return nil, false
		}
		if mods, _ := n["modifiers"].([]any); len(mods) > 0 {
			return nil, false
		}
		if m, _ := n["cte_map"].(node); m != nil {
			if list, _ := m["map"].([]any); len(list) > 0 {
				return nil, false
			}
		}
		l, _ := n["left"].(node)
		r, _ := n["right"].(node)
		lb, lok := unionBranches(l)
		rb, rok := unionBranches(r)
		return append(lb, rb...), lok && rok
	}
	return nil, false
}

// modifiers returns a SELECT node's ORDER, LIMIT and DISTINCT modifiers.
func modifiersOf(sel node) (order, limit, distinct node, other bool) {
	mods, _ := sel["modifiers"].([]any)
	for _, m := range mods {
		mn, _ := m.(node)
		switch str(mn, "type") {
		case "ORDER_MODIFIER":
			order = mn
		case "LIMIT_MODIFIER":
			limit = mn
		case "DISTINCT_MODIFIER":
			if l, _ := mn["distinct_on_targets"].([]any); len(l) > 0 {
				other = true
			}
			distinct = mn
		default:
			other = true
		}
	}
	return
}

// limitValues reads constant LIMIT and OFFSET.
func limitValues(limit node) (n, off int64, ok bool) {
	ln, _ := limit["limit"].(node)
	if ln == nil {
		return 0, 0, false
	}
	if n, ok = intConstant(ln); !ok || n < 0 {
		return 0, 0, false
	}
	if on, _ := limit["offset"].(node); on != nil {
		if off, ok = intConstant(on); !ok || off < 0 {
			return 0, 0, false
		}
	}
	return n, off, true
}

func limitModifier(n int64) node {
	return node{"type": "LIMIT_MODIFIER", "limit": node{
		"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": jsonMax,
		"value": node{"type": node{"id": "BIGINT", "type_info": nil}, "is_null": false, "value": n},
	}, "offset": nil}
}

// planRowwise builds the two-phase forms of a single-table SELECT whose only
// obstacle to scattering is DISTINCT, ORDER BY … LIMIT or LIMIT. names are
// the bound output names.
func planRowwise(sel node, names []string) (*twoPhase, string) {
	if _, _, _, other := modifiersOf(sel); other {
		return nil, "modifier"
	}
	probe := clone(sel)
	probe["modifiers"] = []any{}
	if r := selectScatterReason(probe, nil); r != "" {
		return nil, r
	}
	return splitModifiers(sel, names)
}

// splitModifiers splits a SELECT whose result without its modifiers is
// the union of its parts' results into a partial with the modifiers each
// part can apply (DISTINCT, top-N, LIMIT) and a final over the partials.
func splitModifiers(sel node, names []string) (*twoPhase, string) {
	order, limit, distinct, other := modifiersOf(sel)
	if other {
		return nil, "modifier"
	}
	if !uniqueFold(names) {
		return nil, "duplicate output names"
	}
	var n, off int64
	if limit != nil {
		var ok bool
		if n, off, ok = limitValues(limit); !ok {
			return nil, "non-constant limit"
		}
	}
	tail := ""
	if limit != nil {
		tail = fmt.Sprintf(" LIMIT %d", n)
		if off > 0 {
			tail += fmt.Sprintf(" OFFSET %d", off)
		}
	}
	partial := clone(sel)
	var mods []any
	if distinct != nil {
		mods = append(mods, clone(distinct))
	}
	switch {
	case order != nil && limit != nil:
		keys, ok := orderKeys(order, names)
		if !ok {
			return nil, "order by an expression that is not an output column"
		}
		mods = append(mods, clone(order), limitModifier(n+off))
		partial["modifiers"] = mods
		sel := "*"
		if distinct != nil {
			sel = "DISTINCT *"
		}
		return &twoPhase{kind: "top-n", partial: partial, order: keys, partialRows: n + off, finalRows: n,
			final: fmt.Sprintf("SELECT %s FROM %s ORDER BY %s%s", sel, partialsView, keys, tail)}, ""
	case order != nil:
		return nil, "order by without limit"
	case distinct != nil:
		if limit != nil {
			mods = append(mods, limitModifier(n+off))
		}
		partial["modifiers"] = mods
		tp := &twoPhase{kind: "distinct", partial: partial, final: "SELECT DISTINCT * FROM " + partialsView + tail}
		if limit != nil {
			tp.partialRows, tp.finalRows = n+off, n
		}
		return tp, ""
	case limit != nil:
		partial["modifiers"] = []any{limitModifier(n + off)}
		return &twoPhase{kind: "limit", partial: partial, final: "SELECT * FROM " + partialsView + tail, childLimit: n + off,
			partialRows: n + off, finalRows: n}, ""
	}
	return nil, "nothing to split"
}

// orderKeys renders ORDER BY keys over the output names: each key must be
// an ordinal or an output column's name.
func orderKeys(order node, names []string) (string, bool) {
	orders, _ := order["orders"].([]any)
	var keys []string
	for _, o := range orders {
		on, _ := o.(node)
		e, _ := on["expression"].(node)
		name := ""
		if i, ok := intConstant(e); ok {
			if i < 1 || int(i) > len(names) {
				return "", false
			}
			name = names[i-1]
		} else if str(e, "class") == "COLUMN_REF" {
			parts, _ := e["column_names"].([]any)
			if len(parts) != 1 {
				return "", false
			}
			p, _ := parts[0].(string)
			for _, nm := range names {
				if strings.EqualFold(nm, p) {
					name = nm
				}
			}
		}
		if name == "" {
			return "", false
		}
		k := engine.Quote(name)
		switch str(on, "type") {
		case "ASCENDING":
			k += " ASC"
		case "DESCENDING":
			k += " DESC"
		}
		switch str(on, "null_order") {
		case "NULLS FIRST", "NULLS_FIRST":
			k += " NULLS FIRST"
		case "NULLS LAST", "NULLS_LAST":
			k += " NULLS LAST"
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, ", "), len(keys) > 0
}

func uniqueFold(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		k := strings.ToLower(n)
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}
