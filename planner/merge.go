package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// MERGE INTO target [[AS] t] USING source [[AS] s] ON cond
// WHEN MATCHED [AND c] THEN UPDATE SET col = e, … | UPDATE SET * | DELETE | DO NOTHING
// WHEN NOT MATCHED [BY TARGET] [AND c] THEN INSERT [(cols)] VALUES (e, …) | INSERT * | DO NOTHING
// WHEN NOT MATCHED BY SOURCE [AND c] THEN UPDATE SET … | DELETE | DO NOTHING
//
// It runs as one copy-on-write statement, as UPDATE does: every data file
// of the target is rewritten on a worker with its matched (and, with BY
// SOURCE clauses, unmatched) rows changed or dropped, the source read in
// full by every fragment; the source rows no target row matches are
// written as an INSERT … SELECT writes; one commit replaces the rewritten
// files and adds the new ones, with UPDATE's conflict rules. A target row
// that more than one source row matches (where a WHEN MATCHED clause
// applies) fails the statement before anything is committed, as Trino and
// the SQL standard do; `*` forms take the source's columns by position, as
// DuckDB does. Clauses apply in order: the first whose condition holds.

// errMultipleMatch is what a fragment raises (DuckDB's error()) when a
// target row matched more than one source row.
const errMultipleMatch = "One MERGE target table row matched more than one source row"

// Clause kinds.
const (
	whenMatched = iota
	whenNotMatched
	whenNotMatchedBySource
)

// mergeClause is one WHEN clause as read: cond and exprs index
// mergeText.exprs (cond -1 without a condition).
type mergeClause struct {
	kind   int
	cond   int
	action string // UPDATE, DELETE, INSERT or NOTHING
	star   bool
	cols   []string
	exprs  []int
}

// mergeText is a MERGE as read.
type mergeText struct {
	parts   []string
	alias   string
	source  string
	on      int
	clauses []mergeClause
	exprs   []string
}

// planMerge plans a MERGE statement: its copy-on-write rewrite of the
// target's files (when it has WHEN MATCHED or NOT MATCHED BY SOURCE
// clauses) and the INSERT of the source rows no target row matches.
func (p *Planner) planMerge(ctx context.Context, sess Session, ps *Parser, args []any) (*DML, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w: parameters in MERGE", ErrUnsupported)
	}
	m, err := ps.mergeParts()
	if err != nil {
		return nil, err
	}
	privs := m.privileges()
	tgt, conn, err := p.targetConn(ctx, sess, m.parts, privs...)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	q, err := p.mergeSQL(ctx, conn, sess, tgt, m)
	if err != nil {
		return nil, err
	}
	return &DML{Target: tgt, Match: q.rewrite.match, Insert: q.insert, Keys: q.keys, rewrite: q.rewrite}, nil
}

// privileges are what the statement needs on its target: UPDATE, DELETE
// and INSERT as its clauses do.
func (m *mergeText) privileges() []authz.Privilege {
	var out []authz.Privilege
	seen := map[string]bool{}
	for _, c := range m.clauses {
		if seen[c.action] {
			continue
		}
		seen[c.action] = true
		switch c.action {
		case "UPDATE":
			out = append(out, authz.Update)
		case "DELETE":
			out = append(out, authz.Delete)
		case "INSERT":
			out = append(out, authz.Insert)
		}
	}
	if len(out) == 0 {
		out = append(out, authz.Update)
	}
	return out
}

// mergeParts reads a MERGE statement.
func (ps *Parser) mergeParts() (*mergeText, error) {
	m := &mergeText{}
	ps.Pos = 1
	if !ps.Accept("INTO") {
		return nil, ps.Unexpected()
	}
	var err error
	if m.parts, err = ps.Name(3); err != nil {
		return nil, err
	}
	if ps.Accept("AS") || (ps.Pos < len(ps.toks) && ps.toks[ps.Pos].IsIdent() && !ps.At("USING")) {
		if m.alias, err = ps.Ident(); err != nil {
			return nil, err
		}
	}
	if !ps.Accept("USING") {
		return nil, ps.Unexpected()
	}
	if m.source, err = ps.exprUntil("ON"); err != nil {
		return nil, err
	}
	if !ps.Accept("ON") {
		return nil, ddlSyntaxf("MERGE needs ON and a join condition")
	}
	if m.on, err = m.expr(ps, "WHEN"); err != nil {
		return nil, err
	}
	for ps.Pos < len(ps.toks) {
		c, err := m.clause(ps)
		if err != nil {
			return nil, err
		}
		m.clauses = append(m.clauses, c)
	}
	if len(m.clauses) == 0 {
		return nil, ddlSyntaxf("MERGE needs at least one WHEN clause")
	}
	return m, nil
}

// clause reads one WHEN clause.
func (m *mergeText) clause(ps *Parser) (mergeClause, error) {
	c := mergeClause{cond: -1}
	switch {
	case ps.Accept("WHEN", "MATCHED"):
		c.kind = whenMatched
	case ps.Accept("WHEN", "NOT", "MATCHED", "BY", "SOURCE"):
		c.kind = whenNotMatchedBySource
	case ps.Accept("WHEN", "NOT", "MATCHED"):
		ps.Accept("BY", "TARGET")
		c.kind = whenNotMatched
	default:
		return c, ps.Unexpected()
	}
	var err error
	if ps.Accept("AND") {
		if c.cond, err = m.expr(ps, "THEN"); err != nil {
			return c, err
		}
	}
	if !ps.Accept("THEN") {
		return c, ps.Unexpected()
	}
	switch {
	case ps.Accept("DO", "NOTHING"):
		c.action = "NOTHING"
	case ps.Accept("DELETE"):
		c.action = "DELETE"
	case ps.Accept("UPDATE", "SET"):
		c.action = "UPDATE"
		err = m.updateSet(ps, &c)
	case ps.Accept("INSERT"):
		c.action = "INSERT"
		err = m.insertValues(ps, &c)
	default:
		return c, ps.Unexpected()
	}
	if err != nil {
		return c, err
	}
	if c.action != "NOTHING" && (c.kind == whenNotMatched) != (c.action == "INSERT") {
		return c, fmt.Errorf("%w: WHEN NOT MATCHED [BY TARGET] takes INSERT; WHEN MATCHED and WHEN NOT MATCHED BY SOURCE take UPDATE or DELETE", ErrInvalid)
	}
	if ps.Pos < len(ps.toks) && !ps.At("WHEN") {
		return c, ps.Unexpected()
	}
	return c, nil
}

// updateSet reads "col = e, …" or "*" after UPDATE SET.
func (m *mergeText) updateSet(ps *Parser, c *mergeClause) error {
	if ps.AcceptPunct("*") {
		c.star = true
		return nil
	}
	seen := map[string]bool{}
	for {
		col, err := ps.Ident()
		if err != nil {
			return err
		}
		if seen[strings.ToLower(col)] {
			return fmt.Errorf("%w: column %q is set twice", ErrInvalid, col)
		}
		seen[strings.ToLower(col)] = true
		if !ps.AcceptPunct("=") {
			return ps.Unexpected()
		}
		e, err := m.expr(ps, "WHEN", ",")
		if err != nil {
			return err
		}
		c.cols, c.exprs = append(c.cols, col), append(c.exprs, e)
		if !ps.AcceptPunct(",") {
			return nil
		}
	}
}

// insertValues reads "[(cols)] VALUES (e, …)" or "*" after INSERT.
func (m *mergeText) insertValues(ps *Parser, c *mergeClause) error {
	if ps.AcceptPunct("*") {
		c.star = true
		return nil
	}
	if ps.AcceptPunct("(") {
		for {
			col, err := ps.Ident()
			if err != nil {
				return err
			}
			c.cols = append(c.cols, col)
			if ps.AcceptPunct(")") {
				break
			}
			if !ps.AcceptPunct(",") {
				return ps.Unexpected()
			}
		}
	}
	if !ps.Accept("VALUES") || !ps.AcceptPunct("(") {
		return ps.Unexpected()
	}
	for {
		e, err := m.expr(ps, ",", ")")
		if err != nil {
			return err
		}
		c.exprs = append(c.exprs, e)
		if ps.AcceptPunct(")") {
			break
		}
		if !ps.AcceptPunct(",") {
			return ps.Unexpected()
		}
	}
	if len(c.cols) > 0 && len(c.cols) != len(c.exprs) {
		return fmt.Errorf("%w: INSERT names %d columns but gives %d values", ErrInvalid, len(c.cols), len(c.exprs))
	}
	return nil
}

// expr reads an expression up to one of stops and returns its index.
func (m *mergeText) expr(ps *Parser, stops ...string) (int, error) {
	text, err := ps.exprUntil(stops...)
	if err != nil {
		return 0, err
	}
	m.exprs = append(m.exprs, text)
	return len(m.exprs) - 1, nil
}

// exprUntil returns the text from here up to (not including) the first
// token outside brackets and CASE … END that is one of stops (keywords or
// punctuation), or the end, or a closing bracket of an enclosing group;
// empty text is an error. The tokens are sqltok's, so a bracket, comma or
// keyword inside a string, quoted name or comment is none.
func (ps *Parser) exprUntil(stops ...string) (string, error) {
	from, depth := ps.Pos, 0
scan:
	for ; ps.Pos < len(ps.toks); ps.Pos++ {
		t := ps.toks[ps.Pos]
		if depth == 0 {
			for _, s := range stops {
				if t.Is(s) || t.IsOp(s) {
					break scan
				}
			}
		}
		switch {
		case t.Is("CASE"):
			depth++
		case t.Is("END"):
			depth--
		default:
			depth += nesting(t)
		}
		if depth < 0 {
			break
		}
	}
	if ps.Pos == from {
		return "", ps.Unexpected()
	}
	return ps.Text(from, ps.Pos-1), nil
}

// nesting is +1 for a token that opens a bracket of DuckDB's grammar
// (parentheses, a list's [ ], a struct's or map's { }), -1 for one that
// closes it, 0 for any other: an expression's commas and keywords inside
// brackets are its own.
func nesting(t sqltok.Token) int {
	switch {
	case t.IsOp("("), t.IsOp("["), t.IsOp("{"):
		return 1
	case t.IsOp(")"), t.IsOp("]"), t.IsOp("}"):
		return -1
	}
	return 0
}

// mergeStatements are the SQL icefloe runs for a MERGE: the copy-on-write
// rewrite of the target's files (empty without WHEN MATCHED or BY SOURCE
// clauses) and the INSERT query of the rows no target row matches (empty
// without WHEN NOT MATCHED clauses).
type mergeStatements struct {
	rewrite rewriteSQL
	insert  string
	keys    *MergeKeys
}

// MergeKeys bound the target rows a MERGE may change or would have
// matched: those whose Column equals a value of the source's side of an
// equality conjunct of its ON clause (target.col = source.col). Values
// yields those values (non-null, distinct, cast to the column's type) up
// to MaxMergeKeys+1 rows; Range their least and greatest, for a source
// with more. Without WHEN NOT MATCHED BY SOURCE clauses (which change
// the rows that match nothing) these rows are all a MERGE reads to
// decide its change: the commit's conflict filter.
type MergeKeys struct {
	Column        string
	Values, Range string
}

// MaxMergeKeys is how many source key values a MERGE's conflict filter
// lists; past it the filter is their range.
const MaxMergeKeys = 1000

// mergeSrc is the MERGE's source as DuckDB parsed it, and its alias.
type mergeSrc struct {
	node  node
	alias string
}

// mergeSQL prints the statements of m over the target tgt.
func (p *Planner) mergeSQL(ctx context.Context, conn *engine.Conn, sess Session, tgt *WriteTarget, m *mergeText) (*mergeStatements, error) {
	src, err := mergeSource(ctx, conn, m.source)
	if err != nil {
		return nil, err
	}
	talias := m.alias
	if talias == "" {
		talias = m.parts[len(m.parts)-1]
	}
	if strings.EqualFold(talias, src.alias) {
		return nil, fmt.Errorf("%w: the MERGE target and source are both called %q; give one an alias", ErrInvalid, talias)
	}
	holes, _, err := dmlParts(ctx, conn, "t", m.exprs, "")
	if err != nil {
		return nil, err
	}
	b := &mergeBuilder{m: m, tgt: tgt, talias: engine.Quote(talias), salias: engine.Quote(src.alias), name: quotedName(m.parts)}
	if b.srcCols, err = p.mergeStarColumns(ctx, sess, conn, m, src); err != nil {
		return nil, err
	}
	if err := b.resolveColumns(); err != nil {
		return nil, err
	}
	out := &mergeStatements{}
	if b.has(whenMatched) || b.has(whenNotMatchedBySource) {
		rw, match, err := b.rewriteSQL()
		if err != nil {
			return nil, err
		}
		if out.rewrite.out, err = templateFrom(ctx, conn, rw, holes, src.node); err != nil {
			return nil, err
		}
		if out.rewrite.match, err = templateFrom(ctx, conn, match, holes, src.node); err != nil {
			return nil, err
		}
		out.rewrite.broadcast = true
	}
	if on := holes[m.on]; !b.has(whenNotMatchedBySource) {
		if out.keys, err = b.keysSQL(ctx, conn, on, src); err != nil {
			return nil, err
		}
	}
	if b.has(whenNotMatched) {
		ins, err := b.insertSQL()
		if err != nil {
			return nil, err
		}
		if out.insert, err = templateFrom(ctx, conn, ins, holes, src.node); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeSource parses the text after USING as a FROM item: a table, a
// subquery or VALUES, with an alias (a table's own name without one).
func mergeSource(ctx context.Context, conn *engine.Conn, text string) (mergeSrc, error) {
	root, err := parseNode(ctx, conn, "SELECT * FROM "+text)
	if err != nil {
		return mergeSrc{}, err
	}
	from, _ := root["from_table"].(node)
	list, _ := root["select_list"].([]any)
	star, _ := firstNode(list).(node)
	typ := str(from, "type")
	if !plainSelect(root) || root["where_clause"] != nil || len(list) != 1 || str(star, "class") != "STAR" ||
		(typ != "BASE_TABLE" && typ != "SUBQUERY") {
		return mergeSrc{}, fmt.Errorf("%w: the MERGE source must be a table, a subquery or VALUES, with an alias", ErrSyntax)
	}
	alias := str(from, "alias")
	if alias == "" && typ == "BASE_TABLE" {
		alias = str(from, "table_name")
	}
	if alias == "" {
		return mergeSrc{}, fmt.Errorf("%w: give the MERGE source subquery an alias (USING (…) AS s)", ErrSyntax)
	}
	return mergeSrc{node: from, alias: alias}, nil
}

// mergeStarColumns are the source's column names, by position, when a
// clause uses UPDATE SET * or INSERT * (nil otherwise).
func (p *Planner) mergeStarColumns(ctx context.Context, sess Session, conn *engine.Conn, m *mergeText, src mergeSrc) ([]string, error) {
	star := false
	for _, c := range m.clauses {
		star = star || c.star
	}
	if !star {
		return nil, nil
	}
	q, err := templateFrom(ctx, conn, "SELECT * FROM "+srcHole, nil, src.node)
	if err != nil {
		return nil, err
	}
	bconn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer bconn.Close()
	b, err := p.bind(ctx, bconn, sess, q, true)
	if err != nil {
		return nil, err
	}
	names := fieldNames(b.schema)
	seen := map[string]bool{}
	for _, n := range names {
		if seen[strings.ToLower(n)] {
			return nil, fmt.Errorf("%w: SET * and INSERT * with a source whose column %q appears twice", ErrUnsupported, n)
		}
		seen[strings.ToLower(n)] = true
	}
	return names, nil
}

// mergeBuilder prints a MERGE's statements. Clause i (0-based) is action
// number i+1 in the printed CASE expressions; 0 leaves a row alone.
type mergeBuilder struct {
	m                    *mergeText
	tgt                  *WriteTarget
	talias, salias, name string
	srcCols              []string
	fields               []iceberg.NestedField
	// values[i][f] is the hole clause i gives target field f (-1 none;
	// -2 the source column of a * clause at f's position).
	values [][]int
}

// resolveColumns maps every UPDATE and INSERT clause's columns to the
// target's fields.
func (b *mergeBuilder) resolveColumns() error {
	b.fields = b.tgt.Pinned.Table.Schema().Fields()
	b.values = make([][]int, len(b.m.clauses))
	for i, c := range b.m.clauses {
		v := make([]int, len(b.fields))
		for f := range v {
			v[f] = -1
		}
		b.values[i] = v
		switch {
		case c.action != "UPDATE" && c.action != "INSERT":
		case c.star:
			if len(b.srcCols) != len(b.fields) {
				return fmt.Errorf("%w: %s * needs as many source columns as table %s has (%d), the source has %d", ErrInvalid, c.action, b.tgt.Ref, len(b.fields), len(b.srcCols))
			}
			for f := range v {
				v[f] = -2
			}
		case len(c.cols) == 0:
			if len(c.exprs) != len(b.fields) {
				return fmt.Errorf("%w: table %s has %d columns but the INSERT gives %d values", ErrInvalid, b.tgt.Ref, len(b.fields), len(c.exprs))
			}
			copy(v, c.exprs)
		default:
			for j, col := range c.cols {
				f := b.field(col)
				if f < 0 {
					return fmt.Errorf("%w: table %s has no column %q", ErrInvalid, b.tgt.Ref, col)
				}
				if v[f] >= 0 {
					return fmt.Errorf("%w: column %q is named twice", ErrInvalid, col)
				}
				v[f] = c.exprs[j]
			}
		}
	}
	return nil
}

func (b *mergeBuilder) field(col string) int {
	for i, f := range b.fields {
		if strings.EqualFold(f.Name, col) {
			return i
		}
	}
	return -1
}

func (b *mergeBuilder) has(kind int) bool {
	for _, c := range b.m.clauses {
		if c.kind == kind {
			return true
		}
	}
	return false
}

// action is a CASE giving the number of the first clause of kind whose
// condition holds, 0 for none or DO NOTHING.
func (b *mergeBuilder) action(kind int) string {
	var whens []string
	for i, c := range b.m.clauses {
		if c.kind != kind {
			continue
		}
		cond := "true"
		if c.cond >= 0 {
			cond = "(" + hole(c.cond) + ")"
		}
		n := i + 1
		if c.action == "NOTHING" {
			n = 0
		}
		whens = append(whens, fmt.Sprintf("WHEN %s THEN %d", cond, n))
	}
	if len(whens) == 0 {
		return "0"
	}
	return "CASE " + strings.Join(whens, " ") + " ELSE 0 END"
}

// applies is true where some WHEN MATCHED clause's condition holds.
func (b *mergeBuilder) applies() string {
	var conds []string
	for _, c := range b.m.clauses {
		if c.kind != whenMatched {
			continue
		}
		if c.cond < 0 {
			return "true"
		}
		conds = append(conds, "("+hole(c.cond)+")")
	}
	if len(conds) == 0 {
		return "false"
	}
	return strings.Join(conds, " OR ")
}

// actions are the numbers of the clauses with one of the given actions.
func (b *mergeBuilder) actions(acts ...string) []string {
	var out []string
	for i, c := range b.m.clauses {
		for _, a := range acts {
			if c.action == a {
				out = append(out, fmt.Sprint(i+1))
			}
		}
	}
	return out
}

// inList is "x IN (…)", or false for an empty list.
func inList(x string, nums []string) string {
	if len(nums) == 0 {
		return "false"
	}
	return x + " IN (" + strings.Join(nums, ", ") + ")"
}

// value is the expression clause i gives field f, as the inner select
// names it ("" when none).
func (b *mergeBuilder) value(i, f int) string {
	switch v := b.values[i][f]; {
	case v == -2:
		return b.salias + "." + engine.Quote(b.srcCols[f])
	case v >= 0:
		return "(" + hole(v) + ")"
	}
	return ""
}

// whens are the "WHEN n THEN value" arms of field f over the INSERT
// clauses (insert) or the others; each value goes into the inner select
// list as __icefloe_e<clause>_<field>.
func (b *mergeBuilder) whens(f int, typ string, insert bool, inner *[]string) []string {
	var out []string
	for i, c := range b.m.clauses {
		if (c.kind == whenNotMatched) != insert {
			continue
		}
		if v := b.value(i, f); v != "" {
			e := fmt.Sprintf("__icefloe_e%d_%d", i, f)
			*inner = append(*inner, v+" AS "+e)
			out = append(out, fmt.Sprintf("WHEN %d THEN CAST(%s AS %s)", i+1, e, typ))
		}
	}
	return out
}

// marked is the source with a column that is true on every row, so that
// a LEFT JOIN tells matched target rows.
func (b *mergeBuilder) marked() string {
	return "(SELECT *, true AS __icefloe_m FROM " + srcHole + ") AS " + b.salias
}

// rewriteSQL prints the rewrite of one target file (out) and the count of
// its rows the statement changes, which fails a file where a target row
// matched more than one source row (match).
func (b *mergeBuilder) rewriteSQL() (out, match string, err error) {
	act := "CASE WHEN " + b.salias + ".__icefloe_m THEN " + b.action(whenMatched) + " ELSE " + b.action(whenNotMatchedBySource) + " END"
	inner := []string{b.talias + ".*"}
	var lineage string
	if hasLineage(&input{pinned: b.tgt.Pinned}) {
		for _, c := range lineageColumns {
			inner = append(inner, b.talias+"."+engine.Quote(c))
		}
		lineage = lineageSelect(b.tgt, inList("__icefloe_act", b.actions("UPDATE")))
	}
	inner = append(inner, act+" AS __icefloe_act")
	cols := make([]string, len(b.fields))
	for f, fld := range b.fields {
		typ, err := DuckTypeOf(fld.Type)
		if err != nil {
			return "", "", fmt.Errorf("column %q: %w", fld.Name, err)
		}
		q := engine.Quote(fld.Name)
		whens := b.whens(f, typ, false, &inner)
		if len(whens) == 0 {
			cols[f] = fmt.Sprintf("CAST(%s AS %s) AS %s", q, typ, q)
		} else {
			cols[f] = fmt.Sprintf("CASE __icefloe_act %s ELSE CAST(%s AS %s) END AS %s", strings.Join(whens, " "), q, typ, q)
		}
	}
	from := " FROM " + b.name + " AS " + b.talias + " LEFT JOIN " + b.marked() + " ON (" + hole(b.m.on) + ")"
	out = "SELECT " + strings.Join(cols, ", ") + lineage + " FROM (SELECT " + strings.Join(inner, ", ") + from +
		") AS __icefloe_r WHERE NOT " + inList("__icefloe_act", b.actions("DELETE"))
	changed := "SELECT count(*)" + from + " WHERE " + inList("("+act+")", b.actions("UPDATE", "DELETE"))
	if !b.has(whenMatched) {
		return out, changed, nil
	}
	pairs := "SELECT count(*) FROM " + b.name + " AS " + b.talias + " JOIN " + b.marked() + " ON (" + hole(b.m.on) + ") WHERE " + b.applies()
	rows := "SELECT count(*) FROM " + b.name + " AS " + b.talias + " WHERE EXISTS (SELECT 1 FROM " + b.marked() +
		" WHERE (" + hole(b.m.on) + ") AND (" + b.applies() + "))"
	match = "SELECT CASE WHEN (" + pairs + ") > (" + rows + ") THEN error('" + errMultipleMatch + "') ELSE (" + changed + ") END"
	return out, match, nil
}

// keysSQL prints the queries of the source's join keys (MergeKeys) for
// the first conjunct of on that equates a column of the target with a
// column of the source, both named with their aliases; nil when on has
// none or the column's type has no DuckDB type.
func (b *mergeBuilder) keysSQL(ctx context.Context, conn *engine.Conn, on node, src mergeSrc) (*MergeKeys, error) {
	alias := b.m.alias
	if alias == "" {
		alias = b.m.parts[len(b.m.parts)-1]
	}
	ref := func(n node) (qual, col string, ok bool) {
		if str(n, "class") != "COLUMN_REF" {
			return "", "", false
		}
		parts := anyList(n["column_names"])
		if len(parts) != 2 {
			return "", "", false
		}
		qual, _ = parts[0].(string)
		col, _ = parts[1].(string)
		return qual, col, true
	}
	for _, c := range conjuncts(on) {
		if str(c, "class") != "COMPARISON" || str(c, "type") != "COMPARE_EQUAL" {
			continue
		}
		l, _ := c["left"].(node)
		r, _ := c["right"].(node)
		lq, lcol, lok := ref(l)
		rq, _, rok := ref(r)
		if !lok || !rok {
			continue
		}
		if strings.EqualFold(rq, alias) && strings.EqualFold(lq, src.alias) {
			l, r, lq, rq = r, l, rq, lq
			_, lcol, _ = ref(l)
		}
		if !strings.EqualFold(lq, alias) || !strings.EqualFold(rq, src.alias) {
			continue
		}
		f := b.field(lcol)
		if f < 0 {
			continue
		}
		typ, err := DuckTypeOf(b.fields[f].Type)
		if err != nil {
			return nil, nil
		}
		key := "CAST(" + hole(0) + " AS " + typ + ")"
		values, err := templateFrom(ctx, conn, fmt.Sprintf("SELECT DISTINCT %s AS k FROM %s WHERE %s IS NOT NULL LIMIT %d", key, srcHole, hole(0), MaxMergeKeys+1), []node{r}, src.node)
		if err != nil {
			return nil, err
		}
		rng, err := templateFrom(ctx, conn, fmt.Sprintf("SELECT min(%s) AS lo, max(%s) AS hi FROM %s", key, key, srcHole), []node{r}, src.node)
		if err != nil {
			return nil, err
		}
		return &MergeKeys{Column: b.fields[f].Name, Values: values, Range: rng}, nil
	}
	return nil, nil
}

// insertSQL prints the query of the rows the WHEN NOT MATCHED clauses
// insert: the target's columns, in order.
func (b *mergeBuilder) insertSQL() (string, error) {
	inner := []string{b.action(whenNotMatched) + " AS __icefloe_act"}
	cols := make([]string, len(b.fields))
	for f, fld := range b.fields {
		typ, err := DuckTypeOf(fld.Type)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", fld.Name, err)
		}
		whens := b.whens(f, typ, true, &inner)
		q := engine.Quote(fld.Name)
		if len(whens) == 0 {
			cols[f] = fmt.Sprintf("CAST(NULL AS %s) AS %s", typ, q)
		} else {
			cols[f] = fmt.Sprintf("CASE __icefloe_act %s ELSE CAST(NULL AS %s) END AS %s", strings.Join(whens, " "), typ, q)
		}
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + srcHole +
		" WHERE NOT EXISTS (SELECT 1 FROM " + b.name + " AS " + b.talias + " WHERE (" + hole(b.m.on) + "))) AS __icefloe_r WHERE __icefloe_act <> 0", nil
}
