package planner

import (
	"fmt"
	"strings"
)

// planAggregate splits a grouped aggregate over one table into partial
// aggregates per group and a final re-aggregation:
//
//	count/count(*) → sum of counts; sum → sum; min/max → min/max;
//	bool_and/bool_or → themselves; avg → sum(sum)/sum(count);
//	variance/stddev (samp/pop) → count, sum and sum of squares as DOUBLE.
//
// Anything else (DISTINCT aggregates, FILTER, ordered aggregates, holistic
// ones) returns a reason and the query gathers. The final fragment is cast
// to the bound schema by the caller.
func planAggregate(sel node, aggregates map[string]bool) (*twoPhase, string) {
	if why := aggregateRefusal(sel); why != "" {
		return nil, why
	}
	selectList, _ := sel["select_list"].([]any)
	items := make([]node, 0, len(selectList))
	for _, it := range selectList {
		in, _ := it.(node)
		items = append(items, in)
	}
	groups, why := groupExpressions(sel, items)
	if why != "" {
		return nil, why
	}
	partials, finals, hasAgg, why := decomposeAggregates(sel, aggregates)
	if why != "" {
		return nil, why
	}
	if !hasAgg && len(groups) == 0 {
		return nil, "no aggregate"
	}
	partial, why := partialSelect(sel, groups, partials)
	if why != "" {
		return nil, why
	}
	final := finalSelect(sel, groups, finals, aggregates)
	if bad := strayColumn(final, items); bad != "" {
		return nil, "column " + bad + " outside aggregates and group keys"
	}
	return &twoPhase{kind: "aggregate", partial: partial, wrap: true, finalAST: final, global: len(groups) == 0, groups: len(groups)}, ""
}

// aggregateRefusal is why a select cannot be split into partial and final
// aggregates by its form alone, or "".
func aggregateRefusal(sel node) string {
	if str(sel, "type") != "SELECT_NODE" {
		return "not a select"
	}
	if str(sel, "aggregate_handling") != "STANDARD_HANDLING" {
		return "group by all"
	}
	if m, _ := sel["cte_map"].(node); m != nil {
		if list, _ := m["map"].([]any); len(list) > 0 {
			return "common table expression"
		}
	}
	for _, k := range []string{"qualify", "sample"} {
		if sel[k] != nil {
			return k
		}
	}
	if sets, _ := sel["group_sets"].([]any); len(sets) > 1 {
		return "grouping sets"
	}
	_, _, distinct, other := modifiersOf(sel)
	if other || distinct != nil {
		return "distinct"
	}
	return exprReason(node{"x": sel["select_list"], "y": sel["having"], "z": sel["modifiers"], "w": sel["where_clause"]}, nil)
}

// groupExpressions are the select's group expressions, with ordinals and
// select aliases resolved, or why they cannot be.
func groupExpressions(sel node, items []node) ([]node, string) {
	groupList, _ := sel["group_expressions"].([]any)
	var groups []node
	for _, g := range groupList {
		gn, _ := g.(node)
		if i, ok := intConstant(gn); ok {
			if i < 1 || int(i) > len(items) {
				return nil, "group by ordinal out of range"
			}
			e := clone(items[i-1])
			e["alias"] = ""
			groups = append(groups, e)
			continue
		}
		if str(gn, "class") == "COLUMN_REF" {
			if parts, _ := gn["column_names"].([]any); len(parts) == 1 {
				name, _ := parts[0].(string)
				for _, it := range items {
					if strings.EqualFold(str(it, "alias"), name) {
						return nil, "group by a select alias"
					}
				}
			}
		}
		groups = append(groups, clone(gn))
	}
	return groups, ""
}

// decomposeAggregates decomposes the aggregates of the select list, HAVING
// and the modifiers into partial columns and their final re-aggregation,
// by canonical text (equal ones share their partial columns); hasAgg says
// whether there was any, why is why one cannot be decomposed.
func decomposeAggregates(sel node, aggregates map[string]bool) (partials []node, finals map[string]node, hasAgg bool, why string) {
	finals = map[string]node{}
	collect := func(v any) {
		walk(v, func(n node) bool {
			if why != "" || str(n, "class") != "FUNCTION" || !aggregates[strings.ToLower(str(n, "function_name"))] {
				return why == ""
			}
			hasAgg = true
			key := canonical(n)
			if _, done := finals[key]; done {
				return false
			}
			f, p, reason := decompose(n, len(partials))
			if reason != "" {
				why = reason
				return false
			}
			finals[key] = f
			partials = append(partials, p...)
			return false
		})
	}
	collect(sel["select_list"])
	collect(sel["having"])
	collect(sel["modifiers"])
	return partials, finals, hasAgg, why
}

// partialSelect is the partial query: group expressions and partial
// aggregates, per group of files.
func partialSelect(sel node, groups, partials []node) (node, string) {
	partial := clone(sel)
	var plist []any
	for j, g := range groups {
		plist = append(plist, withAlias(clone(g), fmt.Sprintf("__g%d", j)))
	}
	for _, p := range partials {
		plist = append(plist, p)
	}
	if len(plist) == 0 {
		return nil, "nothing to compute"
	}
	partial["select_list"] = plist
	partial["modifiers"] = []any{}
	partial["having"] = nil
	var pgroups []any
	var set []any
	for j, g := range groups {
		pgroups = append(pgroups, clone(g))
		set = append(set, j)
	}
	partial["group_expressions"] = orEmpty(pgroups)
	if len(set) > 0 {
		partial["group_sets"] = []any{set}
	} else {
		partial["group_sets"] = []any{}
	}
	return partial, ""
}

// finalSelect is the original query over the partials, aggregates
// replaced by their re-aggregation and group expressions by the partial
// columns.
func finalSelect(sel node, groups []node, finals map[string]node, aggregates map[string]bool) node {
	final := clone(sel)
	final["from_table"] = baseTable(partialsView)
	final["where_clause"] = nil
	var fgroups []any
	for j := range groups {
		fgroups = append(fgroups, colRef(fmt.Sprintf("__g%d", j)))
	}
	final["group_expressions"] = orEmpty(fgroups)
	groupKeys := make([]string, len(groups))
	for j, g := range groups {
		groupKeys[j] = canonical(g)
	}
	rewrite := func(v any) any {
		v = replace(v, func(n node) (node, bool) {
			if str(n, "class") == "FUNCTION" && aggregates[strings.ToLower(str(n, "function_name"))] {
				f := clone(finals[canonical(n)])
				f["alias"] = str(n, "alias")
				return f, true
			}
			return nil, false
		})
		return replace(v, func(n node) (node, bool) {
			if str(n, "class") == "" || isOurs(n) {
				return nil, false
			}
			key := canonical(n)
			for j, gk := range groupKeys {
				if key == gk {
					r := colRef(fmt.Sprintf("__g%d", j))
					r["alias"] = str(n, "alias")
					return r, true
				}
			}
			return nil, false
		})
	}
	final["select_list"] = rewrite(final["select_list"])
	final["having"] = rewrite(final["having"])
	final["modifiers"] = rewrite(final["modifiers"])
	return final
}

// strayColumn is a column the final query still reads that is neither
// ours nor a select alias (ORDER BY alias), or "".
func strayColumn(final node, items []node) string {
	aliases := map[string]bool{}
	for _, it := range items {
		if a := str(it, "alias"); a != "" {
			aliases[strings.ToLower(a)] = true
		}
	}
	bad := ""
	walk(node{"s": final["select_list"], "h": final["having"], "m": final["modifiers"]}, func(n node) bool {
		if str(n, "class") == "COLUMN_REF" && !isOurs(n) {
			parts, _ := n["column_names"].([]any)
			name, _ := parts[0].(string)
			if len(parts) != 1 || !aliases[strings.ToLower(name)] {
				bad = name
			}
		}
		return bad == ""
	})
	return bad
}

func orEmpty(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// isOurs tells the partial columns' references.
func isOurs(n node) bool {
	if str(n, "class") != "COLUMN_REF" {
		return false
	}
	parts, _ := n["column_names"].([]any)
	if len(parts) != 1 {
		return false
	}
	s, _ := parts[0].(string)
	return strings.HasPrefix(s, "__g") || strings.HasPrefix(s, "__a")
}

// decompose returns an aggregate's final expression over partial columns
// __a{base}…, and those partial aggregates.
func decompose(agg node, base int) (final node, partials []node, reason string) {
	if agg["distinct"] == true {
		return nil, nil, "distinct aggregate"
	}
	if agg["filter"] != nil {
		return nil, nil, "aggregate filter"
	}
	if ob, _ := agg["order_bys"].(node); ob != nil {
		if l, _ := ob["orders"].([]any); len(l) > 0 {
			return nil, nil, "ordered aggregate"
		}
	}
	args := children(agg)
	name := strings.ToLower(str(agg, "function_name"))
	col := func(i int) node { return colRef(fmt.Sprintf("__a%d", base+i)) }
	part := func(i int, n node) node { return withAlias(n, fmt.Sprintf("__a%d", base+i)) }
	one := func() (node, bool) {
		if len(args) != 1 {
			return nil, false
		}
		return clone(args[0]), true
	}
	switch name {
	case "count_star":
		return funcNode("sum", false, col(0)), []node{part(0, funcNode("count_star", false))}, ""
	case "count":
		if len(args) == 0 {
			return funcNode("sum", false, col(0)), []node{part(0, funcNode("count_star", false))}, ""
		}
		a, ok := one()
		if !ok {
			return nil, nil, "count of several arguments"
		}
		return funcNode("sum", false, col(0)), []node{part(0, funcNode("count", false, a))}, ""
	case "sum", "min", "max", "bool_and", "bool_or":
		a, ok := one()
		if !ok {
			return nil, nil, name + " arguments"
		}
		return funcNode(name, false, col(0)), []node{part(0, funcNode(name, false, a))}, ""
	case "avg", "mean":
		a, ok := one()
		if !ok {
			return nil, nil, "avg arguments"
		}
		f := funcNode("/", true, castNode(funcNode("sum", false, col(0)), "DOUBLE"), castNode(funcNode("sum", false, col(1)), "DOUBLE"))
		return f, []node{part(0, funcNode("sum", false, a)), part(1, funcNode("count", false, clone(a)))}, ""
	case "var_samp", "variance", "var_pop", "stddev", "stddev_samp", "stddev_pop":
		a, ok := one()
		if !ok {
			return nil, nil, name + " arguments"
		}
		x := castNode(a, "DOUBLE")
		parts := []node{
			part(0, funcNode("count", false, clone(a))),
			part(1, funcNode("sum", false, x)),
			part(2, funcNode("sum", false, funcNode("*", true, clone(x), clone(x)))),
		}
		n := castNode(funcNode("sum", false, col(0)), "DOUBLE")
		s := funcNode("sum", false, col(1))
		q := funcNode("sum", false, col(2))
		// m2 = |Q - S*S/n|: the abs only undoes rounding below zero, and
		// keeps NULL for no rows.
		m2 := funcNode("abs", false, funcNode("-", true, q, funcNode("/", true, funcNode("*", true, s, clone(s)), n)))
		var v node
		if name == "var_pop" || name == "stddev_pop" {
			v = funcNode("/", true, m2, funcNode("nullif", false, clone(n), constNode(0)))
		} else {
			v = funcNode("/", true, m2, funcNode("nullif", false, funcNode("-", true, clone(n), constNode(1)), constNode(0)))
		}
		if strings.HasPrefix(name, "stddev") {
			v = funcNode("sqrt", false, v)
		}
		return v, parts, ""
	}
	return nil, nil, "aggregate " + name + " does not decompose"
}
