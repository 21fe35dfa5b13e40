package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
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

// planMerge plans a MERGE statement: its copy-on-write rewrite of the
// target's files (when it has WHEN MATCHED or NOT MATCHED BY SOURCE
// clauses) and the INSERT of the source rows no target row matches.
func (p *Planner) planMerge(ctx context.Context, sess Session, st *parse.Statement, m *parse.Merge, args []any) (*DML, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%w: parameters in MERGE", ErrUnsupported)
	}
	tgt, conn, err := p.targetConn(ctx, sess, m.Target, mergePrivileges(m)...)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := p.RefuseRestrictedWrite(ctx, tgt.Ref, "MERGE"); err != nil {
		// Even an insert-only MERGE tells which source rows match.
		return nil, err
	}
	q, err := p.mergeSQL(ctx, conn, sess, st, tgt, m)
	if err != nil {
		return nil, err
	}
	d := &DML{Target: tgt, Match: q.rewrite.match, Keys: q.keys, rewrite: q.rewrite}
	if q.insert != "" {
		d.Insert = built(st, q.insert)
	}
	return d, nil
}

// privileges are what the statement needs on its target: UPDATE, DELETE
// and INSERT as its clauses do.
func mergePrivileges(m *parse.Merge) []authz.Privilege {
	var out []authz.Privilege
	seen := map[string]bool{}
	for _, c := range m.Clauses {
		if seen[c.Action] {
			continue
		}
		seen[c.Action] = true
		switch c.Action {
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
	Values, Range *parse.Statement
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
func (p *Planner) mergeSQL(ctx context.Context, conn *engine.Conn, sess Session, st *parse.Statement, tgt *WriteTarget, m *parse.Merge) (*mergeStatements, error) {
	src, err := mergeSource(ctx, conn, m.Source)
	if err != nil {
		return nil, err
	}
	talias := m.Alias
	if talias == "" {
		talias = m.Target[len(m.Target)-1]
	}
	if strings.EqualFold(talias, src.alias) {
		return nil, fmt.Errorf("%w: the MERGE target and source are both called %q; give one an alias", ErrInvalid, talias)
	}
	holes, _, err := dmlParts(ctx, conn, "t", m.Exprs, "")
	if err != nil {
		return nil, err
	}
	b := &mergeBuilder{m: m, tgt: tgt, talias: engine.Quote(talias), salias: engine.Quote(src.alias), name: quotedName(m.Target)}
	if b.srcCols, err = p.mergeStarColumns(ctx, sess, conn, st, m, src); err != nil {
		return nil, err
	}
	if err := b.resolveColumns(); err != nil {
		return nil, err
	}
	out := &mergeStatements{}
	if b.has(parse.WhenMatched) || b.has(parse.WhenNotMatchedBySource) {
		rw, match, err := b.rewriteSQL()
		if err != nil {
			return nil, err
		}
		outSQL, err := templateFrom(ctx, conn, rw, holes, src.node)
		if err != nil {
			return nil, err
		}
		matchSQL, err := templateFrom(ctx, conn, match, holes, src.node)
		if err != nil {
			return nil, err
		}
		out.rewrite = rewriteSQL{out: built(st, outSQL), match: built(st, matchSQL), broadcast: true}
	}
	if on := holes[m.On]; !b.has(parse.WhenNotMatchedBySource) {
		if out.keys, err = b.keysSQL(ctx, conn, st, on, src); err != nil {
			return nil, err
		}
	}
	if b.has(parse.WhenNotMatched) {
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
func (p *Planner) mergeStarColumns(ctx context.Context, sess Session, conn *engine.Conn, st *parse.Statement, m *parse.Merge, src mergeSrc) ([]string, error) {
	star := false
	for _, c := range m.Clauses {
		star = star || c.Star
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
	b, err := p.bind(ctx, bconn, sess, built(st, q), true)
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
	m                    *parse.Merge
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
	b.values = make([][]int, len(b.m.Clauses))
	for i, c := range b.m.Clauses {
		v := make([]int, len(b.fields))
		for f := range v {
			v[f] = -1
		}
		b.values[i] = v
		switch {
		case c.Action != "UPDATE" && c.Action != "INSERT":
		case c.Star:
			if len(b.srcCols) != len(b.fields) {
				return fmt.Errorf("%w: %s * needs as many source columns as table %s has (%d), the source has %d", ErrInvalid, c.Action, b.tgt.Ref, len(b.fields), len(b.srcCols))
			}
			for f := range v {
				v[f] = -2
			}
		case len(c.Cols) == 0:
			if len(c.Exprs) != len(b.fields) {
				return fmt.Errorf("%w: table %s has %d columns but the INSERT gives %d values", ErrInvalid, b.tgt.Ref, len(b.fields), len(c.Exprs))
			}
			copy(v, c.Exprs)
		default:
			for j, col := range c.Cols {
				f := b.field(col)
				if f < 0 {
					return fmt.Errorf("%w: table %s has no column %q", ErrInvalid, b.tgt.Ref, col)
				}
				if v[f] >= 0 {
					return fmt.Errorf("%w: column %q is named twice", ErrInvalid, col)
				}
				v[f] = c.Exprs[j]
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

func (b *mergeBuilder) has(kind parse.MergeWhen) bool {
	for _, c := range b.m.Clauses {
		if c.When == kind {
			return true
		}
	}
	return false
}

// action is a CASE giving the number of the first clause of kind whose
// condition holds, 0 for none or DO NOTHING.
func (b *mergeBuilder) action(kind parse.MergeWhen) string {
	var whens []string
	for i, c := range b.m.Clauses {
		if c.When != kind {
			continue
		}
		cond := "true"
		if c.Cond >= 0 {
			cond = "(" + hole(c.Cond) + ")"
		}
		n := i + 1
		if c.Action == "NOTHING" {
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
	for _, c := range b.m.Clauses {
		if c.When != parse.WhenMatched {
			continue
		}
		if c.Cond < 0 {
			return "true"
		}
		conds = append(conds, "("+hole(c.Cond)+")")
	}
	if len(conds) == 0 {
		return "false"
	}
	return strings.Join(conds, " OR ")
}

// actions are the numbers of the clauses with one of the given actions.
func (b *mergeBuilder) actions(acts ...string) []string {
	var out []string
	for i, c := range b.m.Clauses {
		for _, a := range acts {
			if c.Action == a {
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
	for i, c := range b.m.Clauses {
		if (c.When == parse.WhenNotMatched) != insert {
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
	act := "CASE WHEN " + b.salias + ".__icefloe_m THEN " + b.action(parse.WhenMatched) + " ELSE " + b.action(parse.WhenNotMatchedBySource) + " END"
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
	from := " FROM " + b.name + " AS " + b.talias + " LEFT JOIN " + b.marked() + " ON (" + hole(b.m.On) + ")"
	out = "SELECT " + strings.Join(cols, ", ") + lineage + " FROM (SELECT " + strings.Join(inner, ", ") + from +
		") AS __icefloe_r WHERE NOT " + inList("__icefloe_act", b.actions("DELETE"))
	changed := "SELECT count(*)" + from + " WHERE " + inList("("+act+")", b.actions("UPDATE", "DELETE"))
	if !b.has(parse.WhenMatched) {
		return out, changed, nil
	}
	pairs := "SELECT count(*) FROM " + b.name + " AS " + b.talias + " JOIN " + b.marked() + " ON (" + hole(b.m.On) + ") WHERE " + b.applies()
	rows := "SELECT count(*) FROM " + b.name + " AS " + b.talias + " WHERE EXISTS (SELECT 1 FROM " + b.marked() +
		" WHERE (" + hole(b.m.On) + ") AND (" + b.applies() + "))"
	match = "SELECT CASE WHEN (" + pairs + ") > (" + rows + ") THEN error('" + errMultipleMatch + "') ELSE (" + changed + ") END"
	return out, match, nil
}

// keysSQL prints the queries of the source's join keys (MergeKeys) for
// the first conjunct of on that equates a column of the target with a
// column of the source, both named with their aliases; nil when on has
// none or the column's type has no DuckDB type.
func (b *mergeBuilder) keysSQL(ctx context.Context, conn *engine.Conn, st *parse.Statement, on node, src mergeSrc) (*MergeKeys, error) {
	alias := b.m.Alias
	if alias == "" {
		alias = b.m.Target[len(b.m.Target)-1]
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
		return &MergeKeys{Column: b.fields[f].Name, Values: built(st, values), Range: built(st, rng)}, nil
	}
	return nil, nil
}

// insertSQL prints the query of the rows the WHEN NOT MATCHED clauses
// insert: the target's columns, in order.
func (b *mergeBuilder) insertSQL() (string, error) {
	inner := []string{b.action(parse.WhenNotMatched) + " AS __icefloe_act"}
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
		" WHERE NOT EXISTS (SELECT 1 FROM " + b.name + " AS " + b.talias + " WHERE (" + hole(b.m.On) + "))) AS __icefloe_r WHERE __icefloe_act <> 0", nil
}
