package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
)

// Values built from a count. DuckDB builds the result of repeat('x', n),
// lpad(s, n, p) or list_resize(l, n) outside its memory_limit (vector
// string heaps are not buffer-managed), so one such call can take the
// process past its budget. boundValueSizes puts a guard on the count of
// each call: past Options.MaxValueBytes the call raises an error, at
// run time, whose text names the limit's config key, so every node turns
// it into RESOURCE_EXHAUSTED (engine.IsResourceError).

// sizedCount maps a function building a value from a count to the index
// of its count argument, and whether the size of the value also scales
// with its first argument (repeat).
var sizedCount = map[string]struct {
	arg   int
	times bool
}{
	"repeat": {1, true}, "lpad": {1, false}, "rpad": {1, false},
	"list_resize": {1, false}, "array_resize": {1, false},
}

// maxSizedNesting bounds how deep sized calls nest: each guard of a
// repeat copies its first argument, so the rewritten tree doubles with
// each level.
const maxSizedNesting = 4

// boundValueSizes rewrites the count argument n of each sized function
// call in ast to CASE WHEN n > limit / size THEN error(…) ELSE n END,
// where size is the length of the first argument's text (repeat) or 1.
// A select item without an alias that holds such a call keeps the name
// DuckDB gives it unguarded: its text, as DuckDB prints it on conn.
func boundValueSizes(ctx context.Context, conn *engine.Conn, ast *parsed, limit int64) error {
	d := sizedDepth(ast.root)
	if d == 0 {
		return nil
	}
	if d > maxSizedNesting {
		return fmt.Errorf("%w: repeat, lpad, rpad, list_resize and array_resize nest %d deep, more than %d",
			ErrUnsupported, d, maxSizedNesting)
	}
	if err := nameSizedItems(ctx, conn, ast); err != nil {
		return err
	}
	walk(ast.root, func(n node) bool {
		name, sc, kids, ok := sizedCall(n)
		if !ok {
			return true
		}
		count, ok := kids[sc.arg].(node)
		if !ok {
			return true
		}
		bound := node(constNode(limit))
		if first, ok := kids[0].(node); ok && sc.times {
			size := funcNode("greatest", false, constNode(1),
				funcNode("strlen", false, castNode(clone(first), "VARCHAR")))
			bound = funcNode("//", true, bound, size)
		}
		msg := fmt.Sprintf("value too large: %s would build a value of more than %d bytes (limit key %s)",
			name, limit, engine.ValueSizeKey)
		kids[sc.arg] = caseNode(
			node{"class": "COMPARISON", "type": "COMPARE_GREATERTHAN", "alias": "", "query_location": jsonMax,
				"left": clone(count), "right": bound},
			funcNode("error", false, stringConst(msg)), count)
		return true
	})
	return nil
}

// nameSizedItems sets the alias of each select item without one that
// holds a sized call to the item's text, the name DuckDB gives it.
func nameSizedItems(ctx context.Context, conn *engine.Conn, ast *parsed) error {
	var err error
	walk(ast.root, func(n node) bool {
		if err != nil {
			return false
		}
		if str(n, "type") != "SELECT_NODE" {
			return true
		}
		items, _ := n["select_list"].([]any)
		for _, it := range items {
			item, ok := it.(node)
			if !ok || str(item, "alias") != "" || sizedDepth(item) == 0 {
				continue
			}
			var name string
			if name, err = itemText(ctx, conn, item); err != nil {
				return false
			}
			item["alias"] = name
		}
		return true
	})
	return err
}

// itemText is an expression's text as DuckDB prints it (its column name).
func itemText(ctx context.Context, conn *engine.Conn, item node) (string, error) {
	sel := node{"type": "SELECT_NODE", "modifiers": []any{}, "cte_map": node{"map": []any{}},
		"select_list": []any{item}, "from_table": node{"type": "EMPTY", "alias": "", "sample": nil, "query_location": jsonMax},
		"where_clause": nil, "group_expressions": []any{}, "group_sets": []any{},
		"aggregate_handling": "STANDARD_HANDLING", "having": nil, "sample": nil, "qualify": nil}
	doc, err := statement(sel).document()
	if err != nil {
		return "", err
	}
	text, err := conn.DeserializeSQL(ctx, doc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(text), ";"), "SELECT "), nil
}

// sizedCall returns n's function name, its entry in sizedCount and its
// arguments when n is a call of a sized function.
func sizedCall(n node) (name string, sc struct {
	arg   int
	times bool
}, kids []any, ok bool) {
	if str(n, "class") != "FUNCTION" {
		return "", sc, nil, false
	}
	name = strings.ToLower(str(n, "function_name"))
	sc, ok = sizedCount[name]
	kids, _ = n["children"].([]any)
	return name, sc, kids, ok && len(kids) > sc.arg
}

// sizedDepth is the most sized calls on one path down from v.
func sizedDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case node:
		for _, c := range x {
			d = max(d, sizedDepth(c))
		}
		if _, _, _, ok := sizedCall(x); ok {
			d++
		}
	case []any:
		for _, c := range x {
			d = max(d, sizedDepth(c))
		}
	}
	return d
}

// caseNode is CASE WHEN when THEN then ELSE otherwise END.
func caseNode(when, then, otherwise node) node {
	return node{"class": "CASE", "type": "CASE_EXPR", "alias": "", "query_location": jsonMax,
		"case_checks": []any{node{"when_expr": when, "then_expr": then}}, "else_expr": otherwise}
}

// stringConst is a VARCHAR constant.
func stringConst(s string) node {
	return node{"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": jsonMax,
		"value": node{"type": node{"id": "VARCHAR", "type_info": nil}, "is_null": false, "value": s}}
}

// constantValueSizes refuses a sized call whose count is an integer
// constant that, times the length of a constant string first argument
// (repeat), passes limit: for client text DuckDB runs as it is (INSERT …
// VALUES), where the guard of boundValueSizes cannot be put.
func constantValueSizes(root node, limit int64) error {
	var err error
	walk(root, func(n node) bool {
		name, sc, kids, ok := sizedCall(n)
		if !ok || err != nil {
			return err == nil
		}
		count, _ := kids[sc.arg].(node)
		c, ok := intConstant(count)
		if !ok {
			return true
		}
		size := int64(1)
		if first, _ := kids[0].(node); sc.times && first != nil {
			if _, _, v, ok := constant(first); ok {
				if s, ok := v.(string); ok {
					size = max(1, int64(len(s)))
				}
			}
		}
		if c > limit/size {
			err = fmt.Errorf("%w: value too large: %s would build a value of more than %d bytes (limit key %s)",
				ErrInvalid, name, limit, engine.ValueSizeKey)
		}
		return true
	})
	return err
}
