package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// Row filters and column masks (authz.Restriction) are applied where name
// resolution replaces a table reference with its view: the reference
// becomes the subquery
//
//	(SELECT <each column, masked or not> FROM __icefloe_tN AS t WHERE <filter>) AS t
//
// so that everything above it — every strategy, fragment, join, view,
// MERGE source, time-travel read, prepared statement — sees only the rows
// and values the caller's grants give. The expressions come from the
// operator's config; current_user and current_user_attribute('name') are
// replaced with the caller's values before DuckDB's parser checks the
// subquery as one SELECT, and they may use only the table's columns,
// constants and the functions in restrictFunctions.
//
// A restricted read is no bare scan: the workers never stream it without
// DuckDB (passthrough), the query's WHERE is not pushed into the table's
// file pruning through it (a masked column's pruning would read raw
// values), EXPLAIN refuses to print its files and row counts, metadata
// tables ($files, $snapshots, …) of the table are refused, and statements
// that change the table (UPDATE, DELETE, MERGE) are refused: they would
// touch, or learn of, rows and values the caller cannot read.

// restrictFunctions are the functions a filter or mask may call: scalar,
// deterministic, reading nothing but their arguments. DuckDB's operators
// are functions in its tree (+, ||, ~~ for LIKE).
var restrictFunctions = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "//": true, "%": true, "||": true,
	"~~": true, "!~~": true, "~~*": true, "!~~*": true, "^": true,
	"abs": true, "ceil": true, "ceiling": true, "floor": true, "round": true, "trunc": true, "sign": true,
	"lower": true, "upper": true, "lcase": true, "ucase": true, "left": true, "right": true,
	"substring": true, "substr": true, "length": true, "strlen": true, "concat": true, "concat_ws": true,
	"trim": true, "ltrim": true, "rtrim": true, "lpad": true, "rpad": true, "repeat": true,
	"replace": true, "regexp_replace": true, "regexp_matches": true, "contains": true,
	"starts_with": true, "prefix": true, "ends_with": true, "suffix": true, "strpos": true,
	"md5": true, "sha256": true, "hash": true,
	"coalesce": true, "nullif": true, "ifnull": true, "greatest": true, "least": true,
	"year": true, "month": true, "day": true, "date_trunc": true, "date_part": true, "datepart": true,
	"list_contains": true, "array_contains": true, "list_has_any": true, "string_split": true, "split_part": true,
}

// restrictClasses are the expression kinds a filter or mask may hold.
var restrictClasses = map[string]bool{
	"COLUMN_REF": true, "CONSTANT": true, "COMPARISON": true, "CONJUNCTION": true, "OPERATOR": true,
	"FUNCTION": true, "CASE": true, "CAST": true, "BETWEEN": true,
}

// restriction is the caller's restriction on the table ref (a metadata
// table is its table's), or nil.
func (p *Planner) restriction(ctx context.Context, ref catalog.TableRef) *authz.Restriction {
	ref.Table, _ = splitMetaTable(ref.Table)
	return p.opts.Policy.Restriction(auth.FromContext(ctx), authz.TableObject(ref))
}

// restrictedError refuses reading ref in a way its restriction cannot be
// applied to; how says what was refused.
func restrictedError(ref catalog.TableRef, r *authz.Restriction, who, how string) error {
	base := ref
	base.Table, _ = splitMetaTable(ref.Table)
	return fmt.Errorf("%w: %s reads %s under %s; %s", ErrDenied, who, base, r, how)
}

// restrict wraps the reference n (already renamed to in's view) in the
// caller's row filter and column masks, when its grants restrict in's
// table. It reports whether it did.
func (r *resolver) restrict(ctx context.Context, n node, in *input) (bool, error) {
	rs := r.p.restriction(ctx, in.ref)
	if rs == nil {
		return false, nil
	}
	who := auth.Name(ctx)
	if in.meta != "" {
		return false, restrictedError(in.ref, rs, who, "its metadata table $"+in.meta+" would describe the rows and values hidden from "+who+", so it is refused")
	}
	in.restriction = rs
	sch, err := inputSchema(ctx, in)
	if err != nil {
		return false, err
	}
	cols := make([]string, 0, sch.NumFields())
	types := map[string]string{}
	for _, f := range sch.Fields() {
		cols = append(cols, f.Name)
	}
	for _, f := range in.pinned.Table.Schema().Fields() {
		if t, err := DuckTypeOf(f.Type); err == nil {
			types[f.Name] = t
		}
	}
	sub, err := r.p.restrictedScan(ctx, r.conn, rs, in.view, str(n, "alias"), cols, types, false)
	if err != nil {
		return false, fmt.Errorf("%w: the row filter or column masks of %s's grants on %s: %v", ErrInvalid, who, in.ref, err)
	}
	for k := range n {
		delete(n, k)
	}
	for k, v := range sub {
		n[k] = v
	}
	return true, nil
}

// restrictedScan is the SUBQUERY table reference that reads view (of
// ref, whose columns are cols, of DuckDB types types) as rs lets the
// caller: a masked column keeps its type (the mask is cast to it). Its SQL is printed
// from the policy's expressions, checked by the front end and DuckDB's
// parser, and the caller's name and attributes are substituted as
// constants.
func (p *Planner) restrictedScan(ctx context.Context, conn *engine.Conn, rs *authz.Restriction, view, alias string, cols []string, types map[string]string, anyColumn bool) (node, error) {
	for _, a := range rs.Arms {
		for _, e := range append(slices.Collect(maps.Values(a.Masks)), a.Where) {
			if err := oneExpression(e); err != nil {
				return nil, err
			}
		}
	}
	where := make([]string, len(rs.Arms))
	for i, a := range rs.Arms {
		where[i] = "true"
		if a.Where != "" {
			where[i] = "(" + a.Where + ")"
		}
	}
	list := make([]string, len(cols))
	for i, c := range cols {
		e := maskedColumn(rs, where, c)
		if t, ok := types[c]; ok && rs.Masked(strings.ToLower(c)) {
			e = "CAST(" + e + " AS " + t + ")"
		}
		list[i] = e + " AS " + engine.Quote(c)
	}
	sql := "SELECT * FROM (SELECT " + strings.Join(list, ", ") + " FROM " + engine.Quote(view) + " AS " + engine.Quote(alias) +
		" WHERE " + strings.Join(where, " OR ") + ") AS " + engine.Quote(alias)
	st, err := parse.Parse(sql)
	if err != nil || st.Query() == nil {
		if err == nil {
			err = errors.New("not one query")
		}
		return nil, err
	}
	text, err := p.serialize(ctx, conn, st.Query().Duck)
	if err != nil {
		return nil, err
	}
	ast, err := parseAST(text)
	if err != nil {
		return nil, err
	}
	root, _ := ast.root["node"].(node)
	from, _ := root["from_table"].(node)
	subq, _ := from["subquery"].(node)
	inner, _ := subq["node"].(node)
	if str(root, "type") != "SELECT_NODE" || str(from, "type") != "SUBQUERY" || str(inner, "type") != "SELECT_NODE" ||
		len(anyList(inner["select_list"])) != len(cols) {
		return nil, errors.New("an expression is not one SQL expression")
	}
	if err := checkRestrictExprs(inner, cols, alias, auth.FromContext(ctx), anyColumn); err != nil {
		return nil, err
	}
	return from, nil
}

// CheckPolicy checks the row filters and column masks of the planner's
// policy as far as they can be checked without their tables: each is one
// expression that DuckDB's parser takes, of the allowed functions and
// kinds of expression, naming columns by one name. Every read checks them
// again against the table's columns. It reports every problem at once.
func (p *Planner) CheckPolicy(ctx context.Context) error {
	grants := p.opts.Policy.RestrictedGrants()
	if len(grants) == 0 {
		return nil
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var errs []error
	for _, g := range grants {
		rs := &authz.Restriction{Arms: []authz.Arm{{Where: g.Where, Masks: g.Masks}}}
		cols := slices.Sorted(maps.Keys(g.Masks))
		if len(cols) == 0 {
			cols = []string{"c"} // a select list to put the filter under
		}
		if _, err := p.restrictedScan(ctx, conn, rs, "t", "t", cols, nil, true); err != nil {
			errs = append(errs, fmt.Errorf("role %s, grant on %s: %w", g.Role, g.On, err))
		}
	}
	return errors.Join(errs...)
}

// oneExpression checks that the text e stays one expression between
// parentheses: its tokens balance them and hold no statement separator.
func oneExpression(e string) error {
	toks, err := sqltok.Tokenize(e)
	if err != nil {
		return err
	}
	if !sqltok.Balanced(toks) || slices.ContainsFunc(toks, func(t sqltok.Token) bool { return t.IsOp(";") }) {
		return fmt.Errorf("%q is not one expression", e)
	}
	return nil
}

// maskedColumn is the expression of column c: itself when an arm leaves
// it unmasked for every row it gives, else CASE over the arms' filters,
// unmasking arms first.
func maskedColumn(rs *authz.Restriction, where []string, c string) string {
	q := engine.Quote(c)
	key := strings.ToLower(c)
	if !rs.Masked(key) {
		return q
	}
	var plain, masked []string
	for i, a := range rs.Arms {
		m, ok := a.Masks[key]
		switch {
		case !ok && a.Where == "":
			return q
		case !ok:
			plain = append(plain, "WHEN "+where[i]+" THEN "+q)
		default:
			masked = append(masked, "WHEN "+where[i]+" THEN ("+m+")")
		}
	}
	return "CASE " + strings.Join(append(plain, masked...), " ") + " END"
}

// checkRestrictExprs checks the select list and WHERE of the restricted
// scan inner: only the table's columns (cols, unqualified or qualified
// by alias; any column name when anyColumn), constants, the allowed
// operators and functions; and
// replaces current_user and current_user_attribute('name') with pr's
// values.
func checkRestrictExprs(inner node, cols []string, alias string, pr *auth.Principal, anyColumn bool) error {
	var err error
	check := func(n node) bool {
		if err != nil {
			return false
		}
		class := str(n, "class")
		if class == "" {
			return true
		}
		if !restrictClasses[class] {
			err = fmt.Errorf("%s is not allowed (only columns, constants, operators and %s)", strings.ToLower(class), "scalar functions")
			return false
		}
		switch class {
		case "COLUMN_REF":
			names := stringList(n["column_names"])
			if len(names) == 1 && strings.EqualFold(names[0], "current_user") {
				name := ""
				if pr != nil {
					name = pr.Name
				}
				toConstant(n, &name)
				return false
			}
			if len(names) == 2 && strings.EqualFold(names[0], alias) {
				names = names[1:]
			}
			if len(names) != 1 || !anyColumn && !slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, names[0]) }) {
				err = fmt.Errorf("column %s is not a column of the table", strings.Join(names, "."))
			}
			return false
		case "FUNCTION":
			name := strings.ToLower(str(n, "function_name"))
			if name == "current_user_attribute" {
				args := anyList(n["children"])
				var a node
				if len(args) == 1 {
					a, _ = args[0].(node)
				}
				if str(a, "class") != "CONSTANT" {
					err = errors.New("current_user_attribute takes one constant name")
					return false
				}
				key, _ := constantString(a)
				var val *string
				if pr != nil {
					if v, ok := pr.Attributes[key]; ok {
						val = &v
					}
				}
				toConstant(n, val)
				return false
			}
			if str(n, "schema") != "" || str(n, "catalog") != "" || !restrictFunctions[name] || n["filter"] != nil ||
				len(anyList(mapValue(n["order_bys"], "orders"))) > 0 || n["distinct"] == true {
				err = fmt.Errorf("function %s is not allowed", name)
				return false
			}
		}
		return true
	}
	for _, it := range anyList(inner["select_list"]) {
		walk(it, check)
	}
	walk(inner["where_clause"], check)
	return err
}

// toConstant turns n into a VARCHAR constant (NULL for nil), keeping its
// alias.
func toConstant(n node, v *string) {
	alias, loc := n["alias"], n["query_location"]
	for k := range n {
		delete(n, k)
	}
	n["class"], n["type"], n["alias"], n["query_location"] = "CONSTANT", "VALUE_CONSTANT", alias, loc
	if v == nil {
		n["value"] = node{"type": duckType("VARCHAR"), "is_null": true}
		return
	}
	n["value"] = node{"type": duckType("VARCHAR"), "is_null": false, "value": *v}
}

func stringList(v any) []string {
	var out []string
	for _, x := range anyList(v) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func mapValue(v any, key string) any {
	m, _ := v.(node)
	return m[key]
}

// RefuseRestrictedWrite refuses a statement (what) that reads the rows of
// its target ref to change them, when the caller's grants filter or mask
// ref: it would change or learn of rows and values hidden from the
// caller.
func (p *Planner) RefuseRestrictedWrite(ctx context.Context, ref catalog.TableRef, what string) error {
	rs := p.restriction(ctx, ref)
	if rs == nil {
		return nil
	}
	who := auth.Name(ctx)
	return restrictedError(ref, rs, who, what+" would change or tell of rows and values hidden from "+who+", so it is refused")
}
