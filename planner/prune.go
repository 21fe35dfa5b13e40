package planner

import (
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// Pruning turns WHERE conjuncts into Iceberg expressions that only skip
// files (and rows iceberg-go's reader drops early). The full WHERE still
// runs in DuckDB, so a pushed expression must keep every row the WHERE
// keeps: for each conjunct P pushed, SQL(P) = TRUE implies Iceberg(P) =
// TRUE. The rules are conservative:
//   - only a bare column compared with a constant of a type that matches
//     the column's exactly (no cast on the column, no int column against
//     1.5, no timestamp column against a date literal, no floats);
//   - AND may drop parts it cannot convert (it only weakens), but OR and NOT
//     convert only when every part converts exactly — NOT of a weakened
//     conjunction would wrongly strengthen;
//   - LIKE becomes StartsWith only for a plain prefix followed by one
//     trailing %, with no _ and no escape; NOT IN and NULL constants are
//     never pushed;
//   - only for tables referenced once, in a FROM of base tables and inner
//     joins.

// conjuncts splits an AND tree.
func conjuncts(n node) []node {
	if str(n, "class") == "CONJUNCTION" && str(n, "type") == "CONJUNCTION_AND" {
		var out []node
		for _, c := range children(n) {
			out = append(out, conjuncts(c)...)
		}
		return out
	}
	return []node{n}
}

func children(n node) []node {
	list, _ := n["children"].([]any)
	out := make([]node, 0, len(list))
	for _, c := range list {
		if cn, ok := c.(node); ok {
			out = append(out, cn)
		}
	}
	return out
}

// prunable reports whether the FROM of a SELECT node is base tables joined
// with inner joins only.
func prunable(from node) bool {
	if from == nil || !isTableRef(from) {
		return false
	}
	switch str(from, "type") {
	case "BASE_TABLE":
		return from["at_clause"] == nil
	case "JOIN":
		if jt := str(from, "join_type"); jt != "INNER" {
			return false
		}
		if rt := str(from, "ref_type"); rt != "REGULAR" && rt != "CROSS" {
			return false
		}
		l, _ := from["left"].(node)
		r, _ := from["right"].(node)
		return prunable(l) && prunable(r)
	}
	return false
}

// columnResolver finds the input and field a column reference names.
type columnResolver struct {
	inputs  []*input
	aliases map[string]*input
}

func (r columnResolver) resolve(ref node) (*input, iceberg.NestedField, bool) {
	parts, _ := ref["column_names"].([]any)
	var names []string
	for _, p := range parts {
		s, _ := p.(string)
		names = append(names, s)
	}
	find := func(in *input, name string) (iceberg.NestedField, bool) {
		for _, f := range in.pinned.Table.Schema().Fields() {
			if strings.EqualFold(f.Name, name) {
				return f, true
			}
		}
		return iceberg.NestedField{}, false
	}
	switch len(names) {
	case 1:
		var hit *input
		var field iceberg.NestedField
		for _, in := range r.inputs {
			if in.restriction != nil {
				// Read through its filter and masks: its columns are
				// not the query's.
				continue
			}
			if f, ok := find(in, names[0]); ok {
				if hit != nil {
					return nil, field, false // ambiguous
				}
				hit, field = in, f
			}
		}
		return hit, field, hit != nil
	case 2:
		in, ok := r.aliases[strings.ToLower(names[0])]
		if !ok || in == nil || in.restriction != nil {
			return nil, iceberg.NestedField{}, false
		}
		f, ok := find(in, names[1])
		return in, f, ok
	}
	return nil, iceberg.NestedField{}, false
}

// pushFilters sets each input's pruning filter from the WHERE clause of
// root.
func pushFilters(root node, inputs []*input, aliases map[string]*input, refCount map[*input]int) {
	if str(root, "type") != "SELECT_NODE" {
		return
	}
	from, _ := root["from_table"].(node)
	where, _ := root["where_clause"].(node)
	if where == nil || !prunable(from) {
		return
	}
	r := columnResolver{inputs: inputs, aliases: aliases}
	pushed := map[*input][]iceberg.BooleanExpression{}
	for _, c := range conjuncts(where) {
		in, expr, _ := r.convert(c)
		if expr == nil || in == nil || refCount[in] != 1 || in.meta != "" {
			continue
		}
		pushed[in] = append(pushed[in], expr)
	}
	for in, exprs := range pushed {
		var e iceberg.BooleanExpression
		switch len(exprs) {
		case 1:
			e = exprs[0]
		default:
			e = iceberg.NewAnd(exprs[0], exprs[1], exprs[2:]...)
		}
		bound, err := iceberg.BindExpr(in.pinned.Table.Schema(), e, true)
		if err != nil {
			continue
		}
		js, err := json.Marshal(bound)
		if err != nil {
			continue
		}
		in.filter, in.filterJSON = e, string(js)
	}
}

// convert turns one predicate into an Iceberg expression over one input.
// exact says whether the expression is equivalent to the predicate on
// non-NULL inputs (needed under NOT and OR).
func (r columnResolver) convert(n node) (in *input, expr iceberg.BooleanExpression, exact bool) {
	switch str(n, "class") {
	case "CONJUNCTION":
		var parts []iceberg.BooleanExpression
		allExact := true
		var owner *input
		for _, c := range children(n) {
			cin, ce, cex := r.convert(c)
			if ce == nil || (owner != nil && cin != owner) {
				if str(n, "type") == "CONJUNCTION_OR" {
					return nil, nil, false
				}
				allExact = false
				continue
			}
			owner = cin
			parts = append(parts, ce)
			allExact = allExact && cex
		}
		if len(parts) == 0 {
			return nil, nil, false
		}
		if str(n, "type") == "CONJUNCTION_OR" {
			if !allExact || len(parts) != len(children(n)) {
				return nil, nil, false
			}
			if len(parts) == 1 {
				return owner, parts[0], true
			}
			return owner, iceberg.NewOr(parts[0], parts[1], parts[2:]...), true
		}
		if str(n, "type") != "CONJUNCTION_AND" {
			return nil, nil, false
		}
		if len(parts) == 1 {
			return owner, parts[0], allExact
		}
		return owner, iceberg.NewAnd(parts[0], parts[1], parts[2:]...), allExact
	case "OPERATOR":
		kids := children(n)
		switch str(n, "type") {
		case "OPERATOR_NOT":
			if len(kids) != 1 {
				return nil, nil, false
			}
			cin, ce, cex := r.convert(kids[0])
			if ce == nil || !cex {
				return nil, nil, false
			}
			return cin, iceberg.NewNot(ce), true
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL":
			if len(kids) != 1 || str(kids[0], "class") != "COLUMN_REF" {
				return nil, nil, false
			}
			cin, f, ok := r.resolve(kids[0])
			if !ok {
				return nil, nil, false
			}
			if str(n, "type") == "OPERATOR_IS_NULL" {
				return cin, iceberg.IsNull(iceberg.Reference(f.Name)), true
			}
			return cin, iceberg.NotNull(iceberg.Reference(f.Name)), true
		case "COMPARE_IN":
			if len(kids) < 2 || str(kids[0], "class") != "COLUMN_REF" {
				return nil, nil, false
			}
			cin, f, ok := r.resolve(kids[0])
			if !ok {
				return nil, nil, false
			}
			var lits []iceberg.Literal
			for _, k := range kids[1:] {
				lit, ok := literalFor(f.Type, k)
				if !ok {
					return nil, nil, false
				}
				lits = append(lits, lit)
			}
			return cin, iceberg.SetPredicate(iceberg.OpIn, iceberg.Reference(f.Name), lits), true
		}
	case "COMPARISON":
		l, _ := n["left"].(node)
		rt, _ := n["right"].(node)
		op, ok := comparisonOps[str(n, "type")]
		if !ok || l == nil || rt == nil {
			return nil, nil, false
		}
		if str(l, "class") != "COLUMN_REF" {
			l, rt = rt, l
			op = flipped[op]
		}
		if str(l, "class") != "COLUMN_REF" {
			return nil, nil, false
		}
		cin, f, ok := r.resolve(l)
		if !ok {
			return nil, nil, false
		}
		lit, ok := literalFor(f.Type, rt)
		if !ok {
			return nil, nil, false
		}
		return cin, iceberg.LiteralPredicate(op, iceberg.Reference(f.Name), lit), true
	case "BETWEEN":
		col, _ := n["input"].(node)
		lo, _ := n["lower"].(node)
		hi, _ := n["upper"].(node)
		if col == nil || str(col, "class") != "COLUMN_REF" || lo == nil || hi == nil {
			return nil, nil, false
		}
		cin, f, ok := r.resolve(col)
		if !ok {
			return nil, nil, false
		}
		ll, ok1 := literalFor(f.Type, lo)
		hl, ok2 := literalFor(f.Type, hi)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		ref := iceberg.Reference(f.Name)
		return cin, iceberg.NewAnd(iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, ll), iceberg.LiteralPredicate(iceberg.OpLTEQ, ref, hl)), true
	case "FUNCTION":
		// col LIKE 'prefix%' (the ~~ operator, no ESCAPE clause).
		kids := children(n)
		if str(n, "function_name") != "~~" || len(kids) != 2 || str(kids[0], "class") != "COLUMN_REF" {
			return nil, nil, false
		}
		cin, f, ok := r.resolve(kids[0])
		if !ok {
			return nil, nil, false
		}
		if _, isString := f.Type.(iceberg.StringType); !isString {
			return nil, nil, false
		}
		pat, ok := constantString(kids[1])
		if !ok {
			return nil, nil, false
		}
		prefix, ok := likePrefix(pat)
		if !ok {
			return nil, nil, false
		}
		return cin, iceberg.StartsWith(iceberg.Reference(f.Name), prefix), true
	}
	return nil, nil, false
}

// likePrefix returns p's prefix when p is exactly a literal prefix and one
// trailing %: no other wildcard, no backslash (DuckDB's LIKE has no
// default escape, but a pattern that mentions one is left alone).
func likePrefix(p string) (string, bool) {
	if !strings.HasSuffix(p, "%") {
		return "", false
	}
	prefix := p[:len(p)-1]
	if prefix == "" || strings.ContainsAny(prefix, "%_\\") {
		return "", false
	}
	return prefix, true
}

var comparisonOps = map[string]iceberg.Operation{
	"COMPARE_EQUAL":                iceberg.OpEQ,
	"COMPARE_NOTEQUAL":             iceberg.OpNEQ,
	"COMPARE_LESSTHAN":             iceberg.OpLT,
	"COMPARE_GREATERTHAN":          iceberg.OpGT,
	"COMPARE_LESSTHANOREQUALTO":    iceberg.OpLTEQ,
	"COMPARE_GREATERTHANOREQUALTO": iceberg.OpGTEQ,
}

var flipped = map[iceberg.Operation]iceberg.Operation{
	iceberg.OpEQ: iceberg.OpEQ, iceberg.OpNEQ: iceberg.OpNEQ,
	iceberg.OpLT: iceberg.OpGT, iceberg.OpGT: iceberg.OpLT,
	iceberg.OpLTEQ: iceberg.OpGTEQ, iceberg.OpGTEQ: iceberg.OpLTEQ,
}

// constant returns a CONSTANT node's type id, decimal scale and value.
func constant(n node) (id string, scale int, val any, ok bool) {
	if str(n, "class") != "CONSTANT" {
		return "", 0, nil, false
	}
	v, _ := n["value"].(node)
	if v == nil || v["is_null"] == true {
		return "", 0, nil, false
	}
	t, _ := v["type"].(node)
	id = str(t, "id")
	if ti, _ := t["type_info"].(node); ti != nil {
		if s, ok := ti["scale"].(json.Number); ok {
			sc, _ := s.Int64()
			scale = int(sc)
		}
	}
	return id, scale, v["value"], true
}

func constantString(n node) (string, bool) {
	id, _, v, ok := constant(n)
	if !ok || id != "VARCHAR" {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// castOfString returns the text and target type of CAST('text' AS T),
// which is how DATE '…' and TIMESTAMP '…' literals arrive.
func castOfString(n node) (text, target string, ok bool) {
	if str(n, "class") != "CAST" || n["try_cast"] == true {
		return "", "", false
	}
	child, _ := n["child"].(node)
	text, ok = constantString(child)
	if !ok {
		return "", "", false
	}
	ct, _ := n["cast_type"].(node)
	return text, str(ct, "id"), true
}

var intTypes = map[string]bool{"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true, "UTINYINT": true, "USMALLINT": true, "UINTEGER": true}

// literalFor converts a constant to a literal of column type t when the
// comparison DuckDB makes is exactly the comparison Iceberg makes.
func literalFor(t iceberg.Type, n node) (iceberg.Literal, bool) {
	if text, target, ok := castOfString(n); ok {
		switch t.(type) {
		case iceberg.DateType:
			if target != "DATE" {
				return nil, false
			}
			d, err := time.Parse("2006-01-02", text)
			if err != nil {
				return nil, false
			}
			return iceberg.NewLiteral(iceberg.Date(d.Unix() / 86400)), true
		case iceberg.TimestampType:
			if target != "TIMESTAMP" {
				return nil, false
			}
			ts, ok := parseTimestamp(text, false)
			if !ok {
				return nil, false
			}
			return iceberg.NewLiteral(iceberg.Timestamp(ts.UnixMicro())), true
		case iceberg.TimestampTzType:
			if target != "TIMESTAMP WITH TIME ZONE" {
				return nil, false
			}
			ts, ok := parseTimestamp(text, true)
			if !ok {
				return nil, false
			}
			return iceberg.NewLiteral(iceberg.Timestamp(ts.UnixMicro())), true
		}
		return nil, false
	}
	id, scale, v, ok := constant(boundParam(n))
	if !ok {
		return nil, false
	}
	switch tt := t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		if !intTypes[id] {
			return nil, false
		}
		i, ok := intValue(v)
		if !ok {
			return nil, false
		}
		if _, is32 := t.(iceberg.Int32Type); is32 {
			if i < -1<<31 || i > 1<<31-1 {
				return nil, false
			}
			return iceberg.NewLiteral(int32(i)), true
		}
		return iceberg.NewLiteral(i), true
	case iceberg.DecimalType:
		// iceberg-go v0.7.0's row filter panics comparing decimals
		// (arrow compute castBinaryDecimalArgs), in a goroutine of its
		// reader: never push a decimal predicate.
		if !pushDecimals {
			return nil, false
		}
		if !intTypes[id] && id != "DECIMAL" {
			return nil, false
		}
		num, ok := v.(json.Number)
		if !ok || scale > tt.Scale() {
			return nil, false
		}
		bi, ok := new(big.Int).SetString(string(num), 10)
		if !ok {
			return nil, false
		}
		bi.Mul(bi, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(tt.Scale()-scale)), nil))
		if bi.BitLen() > 126 {
			return nil, false
		}
		d := decimal128.FromBigInt(bi)
		if !d.FitsInPrecision(int32(tt.Precision())) {
			return nil, false
		}
		return iceberg.NewLiteral(iceberg.Decimal{Val: d, Scale: tt.Scale()}), true
	case iceberg.StringType:
		if id != "VARCHAR" {
			return nil, false
		}
		s, ok := v.(string)
		return iceberg.NewLiteral(s), ok
	case iceberg.BooleanType:
		if id != "BOOLEAN" {
			return nil, false
		}
		b, ok := v.(bool)
		return iceberg.NewLiteral(b), ok
	}
	return nil, false
}

// boundParam returns the constant of a bound parameter, which
// substituteParams prints as CAST(constant AS T) with the constant already
// of type T (constantNode); any other node is returned as it is.
func boundParam(n node) node {
	if str(n, "class") != "CAST" || n["try_cast"] == true {
		return n
	}
	child, _ := n["child"].(node)
	if str(child, "class") != "CONSTANT" {
		return n
	}
	v, _ := child["value"].(node)
	vt, _ := v["type"].(node)
	ct, _ := n["cast_type"].(node)
	if vt == nil || ct == nil || !reflect.DeepEqual(vt, ct) {
		return n
	}
	return child
}

// intValue is an integer constant's value: a json.Number as DuckDB prints
// it, or the Go integer a bound parameter carries.
func intValue(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}

// parseTimestamp reads the timestamp literals DuckDB accepts that are
// unambiguous here; withZone allows an offset (none means UTC, the
// engine's time zone).
func parseTimestamp(s string, withZone bool) (time.Time, bool) {
	layouts := []string{"2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999", "2006-01-02"}
	if withZone {
		layouts = append([]string{"2006-01-02 15:04:05.999999Z07:00", "2006-01-02 15:04:05.999999Z07", "2006-01-02T15:04:05.999999Z07:00"}, layouts...)
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var _ = strconv.Itoa

// pushDecimals stays false while iceberg-go's record filter crashes on
// decimal comparisons.
const pushDecimals = false
