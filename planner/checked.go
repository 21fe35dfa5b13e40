package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/engine"
)

// Statements with client text in them reach DuckDB in one of two ways:
// as one statement whose kind DuckDB's parser confirmed (engine.ExecChecked,
// engine.Prepared) after its client part was parsed on its own and checked
// for shape (CheckValues), or as SQL icefloe printed from a template whose
// holes are expressions DuckDB parsed out of the client's text (template).
// Never as client text spliced into a statement unchecked.

// parseNode parses text with DuckDB's parser and returns its one query
// node. The caller checks its shape, then refuseEscapes.
func parseNode(ctx context.Context, conn *engine.Conn, text string) (node, error) {
	out, err := conn.SerializeSQL(ctx, text)
	if err != nil {
		return nil, err
	}
	ast, err := parseAST(out)
	if err != nil {
		return nil, err
	}
	root, _ := ast.root["node"].(node)
	if root == nil {
		return nil, fmt.Errorf("%w: not a query", ErrSyntax)
	}
	return root, nil
}

// plainSelect reports whether n is a SELECT with nothing but a select list,
// a FROM and a WHERE: no WITH, GROUP BY, HAVING, QUALIFY, SAMPLE, ORDER
// BY, LIMIT or DISTINCT.
func plainSelect(n node) bool {
	if str(n, "type") != "SELECT_NODE" || str(n, "aggregate_handling") != "STANDARD_HANDLING" {
		return false
	}
	if mods, _ := n["modifiers"].([]any); len(mods) > 0 {
		return false
	}
	if m, _ := n["cte_map"].(node); m != nil {
		if list, _ := m["map"].([]any); len(list) > 0 {
			return false
		}
	}
	for _, k := range []string{"group_expressions", "group_sets"} {
		if l, _ := n[k].([]any); len(l) > 0 {
			return false
		}
	}
	for _, k := range []string{"having", "sample", "qualify"} {
		if n[k] != nil {
			return false
		}
	}
	return true
}

// CheckValues checks that text (what follows INSERT INTO t [(cols)]) is
// exactly a VALUES list of expressions without queries, so that the
// INSERT it ends is an INSERT of those rows and nothing else, and that no
// constant count makes a value larger than maxValue (valuesize.go).
func CheckValues(ctx context.Context, conn *engine.Conn, text string, maxValue int64) error {
	root, err := parseNode(ctx, conn, text)
	if err != nil {
		return err
	}
	from, _ := root["from_table"].(node)
	list, _ := root["select_list"].([]any)
	star, _ := firstNode(list).(node)
	if !plainSelect(root) || root["where_clause"] != nil || str(from, "type") != "EXPRESSION_LIST" ||
		len(list) != 1 || str(star, "class") != "STAR" || str(star, "relation_name") != "" {
		return fmt.Errorf("%w: queries inside INSERT … VALUES", ErrUnsupported)
	}
	var sub bool
	walk(from["values"], func(n node) bool {
		if str(n, "class") == "SUBQUERY" {
			sub = true
		}
		return !sub
	})
	if sub {
		return fmt.Errorf("%w: queries inside INSERT … VALUES", ErrUnsupported)
	}
	if err := constantValueSizes(root, maxValue); err != nil {
		return err
	}
	return refuseEscapes(statement(root))
}

func firstNode(l []any) any {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// dmlParts has DuckDB parse the expressions of an UPDATE's SET (exprs,
// may be none) and a DELETE's or UPDATE's WHERE (pred, may be empty) as
// "SELECT exprs FROM name WHERE pred", checks that it parsed as exactly
// that, and returns the expressions and the WHERE clause (nil without one).
func dmlParts(ctx context.Context, conn *engine.Conn, name string, exprs []string, pred string) ([]node, node, error) {
	sel := "*"
	if len(exprs) > 0 {
		sel = strings.Join(exprs, ", ")
	}
	text := "SELECT " + sel + " FROM " + name
	if pred != "" {
		text += " WHERE " + pred
	}
	root, err := parseNode(ctx, conn, text)
	if err != nil {
		return nil, nil, err
	}
	list, _ := root["select_list"].([]any)
	from, _ := root["from_table"].(node)
	where, _ := root["where_clause"].(node)
	ok := plainSelect(root) && str(from, "type") == "BASE_TABLE" && str(from, "alias") == "" && (where != nil) == (pred != "")
	if len(exprs) == 0 {
		star, _ := firstNode(list).(node)
		ok = ok && len(list) == 1 && str(star, "class") == "STAR"
	} else {
		ok = ok && len(list) == len(exprs)
	}
	items := make([]node, 0, len(list))
	for _, it := range list {
		n, _ := it.(node)
		ok = ok && n != nil && str(n, "alias") == ""
		items = append(items, n)
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: the SET or WHERE clause does not read as expressions", ErrSyntax)
	}
	if err := refuseEscapes(statement(root)); err != nil {
		return nil, nil, err
	}
	if len(exprs) == 0 {
		items = nil
	}
	return items, where, nil
}

// hole is the placeholder of template i: "__icefloe_hole(i)".
func hole(i int) string { return fmt.Sprintf("__icefloe_hole(%d)", i) }

// template prints tmpl (SQL icefloe wrote, with hole(i) where expression
// i goes) with the holes filled by exprs, through DuckDB's AST: the
// expressions go in as parsed nodes, never as text.
func template(ctx context.Context, conn *engine.Conn, tmpl string, exprs []node) (string, error) {
	return templateFrom(ctx, conn, tmpl, exprs, nil)
}

// srcHole is the table name a template puts where src goes (templateFrom).
const srcHole = "__icefloe_src"

// templateFrom is template that also puts the parsed table reference src
// wherever tmpl reads the table srcHole.
func templateFrom(ctx context.Context, conn *engine.Conn, tmpl string, exprs []node, src node) (string, error) {
	out, err := conn.SerializeSQL(ctx, tmpl)
	if err != nil {
		return "", err
	}
	ast, err := parseAST(out)
	if err != nil {
		return "", fmt.Errorf("planner: template %q: %w", tmpl, err)
	}
	var missing error
	ast.root = replace(ast.root, func(n node) (node, bool) {
		if src != nil && str(n, "type") == "BASE_TABLE" && str(n, "table_name") == srcHole {
			return clone(src), true
		}
		if str(n, "class") != "FUNCTION" || str(n, "function_name") != "__icefloe_hole" {
			return nil, false
		}
		kids, _ := n["children"].([]any)
		i := -1
		if len(kids) == 1 {
			if c, ok := kids[0].(node); ok {
				if v, ok := intConstant(c); ok {
					i = int(v)
				}
			}
		}
		if i < 0 || i >= len(exprs) || exprs[i] == nil {
			missing = fmt.Errorf("planner: template %q: no expression for hole %d", tmpl, i)
			return n, true
		}
		c := clone(exprs[i])
		if a := str(n, "alias"); a != "" {
			c["alias"] = a // "hole(i) AS a" keeps its name
		}
		return c, true
	}).(node)
	if missing != nil {
		return "", missing
	}
	doc, err := ast.document()
	if err != nil {
		return "", err
	}
	sql, err := conn.DeserializeSQL(ctx, doc)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return sql, nil
}

// quotedName is a dotted name with every part quoted.
func quotedName(parts []string) string {
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = engine.Quote(p)
	}
	return strings.Join(q, ".")
}
