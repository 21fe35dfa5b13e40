package planner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
)

// AST builders and helpers for the two-phase rewrites. Nodes are DuckDB's
// JSON AST as json_serialize_sql prints it.

// clone deep-copies a node.
func clone(n node) node {
	b, _ := json.Marshal(n)
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out node
	_ = dec.Decode(&out)
	return out
}

// canonical is n's JSON without positions and aliases, for comparing
// expressions.
func canonical(v any) string {
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case node:
			m := make(node, len(x))
			for k, c := range x {
				if k == "query_location" || k == "alias" {
					continue
				}
				m[k] = strip(c)
			}
			return m
		case []any:
			out := make([]any, len(x))
			for i, c := range x {
				out[i] = strip(c)
			}
			return out
		}
		return v
	}
	b, _ := json.Marshal(strip(v))
	return string(b)
}

func colRef(name string) node {
	return node{"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": "", "query_location": jsonMax, "column_names": []any{name}}
}

func funcNode(name string, operator bool, args ...node) node {
	kids := make([]any, len(args))
	for i, a := range args {
		kids[i] = a
	}
	return node{
		"class": "FUNCTION", "type": "FUNCTION", "alias": "", "query_location": jsonMax,
		"function_name": name, "schema": "", "catalog": "", "children": kids, "filter": nil,
		"order_bys": node{"type": "ORDER_MODIFIER", "orders": []any{}},
		"distinct":  false, "is_operator": operator, "export_state": false,
	}
}

func castNode(child node, typeID string) node {
	return node{
		"class": "CAST", "type": "OPERATOR_CAST", "alias": "", "query_location": jsonMax,
		"child": child, "cast_type": node{"id": typeID, "type_info": nil}, "try_cast": false,
	}
}

func constNode(v int64) node {
	return node{
		"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": jsonMax,
		"value": node{"type": node{"id": "BIGINT", "type_info": nil}, "is_null": false, "value": v},
	}
}

func withAlias(n node, alias string) node {
	n["alias"] = alias
	return n
}

// baseTable is a FROM of one named table.
func baseTable(name string) node {
	return node{
		"type": "BASE_TABLE", "alias": "", "sample": nil, "query_location": jsonMax,
		"schema_name": "", "table_name": name, "column_name_alias": []any{}, "catalog_name": "", "at_clause": nil,
	}
}

// replace rewrites the tree under v bottom-up... top-down: fn returns a
// replacement node and true to stop descending there.
func replace(v any, fn func(n node) (node, bool)) any {
	switch x := v.(type) {
	case node:
		if r, ok := fn(x); ok {
			return r
		}
		for k, c := range x {
			x[k] = replace(c, fn)
		}
		return x
	case []any:
		for i, c := range x {
			x[i] = replace(c, fn)
		}
		return x
	}
	return v
}

// intConstant returns the value of an integer CONSTANT node.
func intConstant(n node) (int64, bool) {
	id, _, v, ok := constant(n)
	if !ok || !intTypes[id] {
		return 0, false
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	return i, err == nil
}

// statement wraps a query node as a one-statement document root.
func statement(n node) *parsed {
	return &parsed{root: node{"node": n, "named_param_map": []any{}}}
}

// castWrap selects q's columns cast to the bound types under the bound
// names, so a rewritten step streams exactly the bound schema. DuckDB keeps
// the inner order under this projection.
func castWrap(q string, names, types []string) string {
	var cols, sel []string
	for i := range names {
		c := fmt.Sprintf("__c%d", i)
		cols = append(cols, c)
		sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", c, types[i], engine.Quote(names[i])))
	}
	return fmt.Sprintf("SELECT %s FROM (%s) AS __icefloe_w(%s)", strings.Join(sel, ", "), q, strings.Join(cols, ", "))
}

// jsonMax is the "no position" query_location DuckDB prints.
var jsonMax = json.Number("18446744073709551615")
