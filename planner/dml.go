package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

// DML is an UPDATE, DELETE or MERGE planned against its target table
// (PlanDML): the statements of the copy-on-write rewrite of its files
// and, for MERGE, the query of the source rows no target row matches.
type DML struct {
	// Target is the table the statement writes, pinned as loaded.
	Target *WriteTarget
	// Match counts the rows of the target the statement changes
	// (SELECT count(*) FROM target [WHERE pred]); ExactFilter converts a
	// DELETE's to an Iceberg filter.
	Match *parse.Statement
	// Where says a DELETE or UPDATE has a WHERE clause.
	Where bool
	// Insert is MERGE's INSERT query of the source rows no target row
	// matches, for statement's INSERT … SELECT; nil without WHEN NOT
	// MATCHED.
	Insert *parse.Statement
	// Keys, for a MERGE, are the queries of the source's join keys that
	// bound the target rows it may change (nil when its ON clause gives
	// none).
	Keys *MergeKeys
	// rewrite is the copy-on-write statements (out nil when the
	// statement rewrites no file: a MERGE without WHEN MATCHED clauses).
	rewrite rewriteSQL
}

// Rewrites says the statement rewrites files of its target
// (PlanRewrite).
func (d *DML) Rewrites() bool { return d.rewrite.out != nil }

// PlanDML plans an UPDATE, DELETE or MERGE statement: it loads its
// target once the caller holds the privileges the statement needs, and
// prints the statements it runs through DuckDB's AST (the client's
// expressions go in as DuckDB parsed them). args bind the placeholders of
// an UPDATE's SET and WHERE or a DELETE's WHERE; MERGE takes none.
// Anything else returns an error wrapping ErrUnsupported.
func (p *Planner) PlanDML(ctx context.Context, sess Session, st *parse.Statement, args []any) (*DML, error) {
	switch b := st.Body.(type) {
	case *parse.Delete:
		return p.planDelete(ctx, sess, st, b, args)
	case *parse.Update:
		return p.planUpdate(ctx, sess, st, b, args)
	case *parse.Merge:
		return p.planMerge(ctx, sess, st, b, args)
	}
	return nil, fmt.Errorf("%w: %s statements", ErrUnsupported, st.Kind)
}

// built is a query icefloe printed for st, whose names resolve as st
// wrote them.
func built(st *parse.Statement, sql string) *parse.Statement {
	return parse.Built(sql, st.QuotedNames())
}

// planDelete plans DELETE FROM name [WHERE pred] as a copy-on-write
// rewrite: every data file with a matching row is rewritten without those
// rows (a file whose rows all match is dropped without a replacement).
func (p *Planner) planDelete(ctx context.Context, sess Session, st *parse.Statement, d *parse.Delete, args []any) (*DML, error) {
	tgt, conn, err := p.targetConn(ctx, sess, d.Name, authz.Delete)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	keep, match, err := deleteSQL(ctx, conn, tgt, quotedName(d.Name), d.Where)
	if err != nil {
		return nil, err
	}
	return &DML{Target: tgt, Match: built(st, match), Where: d.Where != "",
		rewrite: rewriteSQL{out: built(st, keep), match: built(st, match), outArgs: args, matchArgs: args}}, nil
}

// targetConn loads the target table of a DELETE or UPDATE once the caller
// holds each of privs on it, and opens a connection to print its
// statements on; the caller closes it.
func (p *Planner) targetConn(ctx context.Context, sess Session, parts []string, privs ...authz.Privilege) (*WriteTarget, *engine.Conn, error) {
	tgt, err := p.LoadTarget(ctx, sess, parts, privs...)
	if err != nil {
		return nil, nil, err
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	return tgt, conn, nil
}

// deleteSQL prints a DELETE's statements over name: keep yields the rows
// of a file that stay, match counts those that go. The client's WHERE
// clause goes in as DuckDB parsed it (template).
func deleteSQL(ctx context.Context, conn *engine.Conn, tgt *WriteTarget, name, pred string) (keep, match string, err error) {
	sel, err := castColumns(tgt.Pinned.Table.Schema(), nil, false)
	if err != nil {
		return "", "", err
	}
	sel += lineageSelect(tgt, "")
	keep = "SELECT " + sel + " FROM " + name + " WHERE false"
	match = "SELECT count(*) FROM " + name
	if pred == "" {
		return keep, match, nil
	}
	_, where, err := dmlParts(ctx, conn, name, nil, pred)
	if err != nil {
		return "", "", err
	}
	holes := []node{where}
	if keep, err = template(ctx, conn, "SELECT "+sel+" FROM "+name+" WHERE NOT coalesce(("+hole(0)+"), false)", holes); err != nil {
		return "", "", err
	}
	if match, err = template(ctx, conn, match+" WHERE "+hole(0), holes); err != nil {
		return "", "", err
	}
	return keep, match, nil
}

// ExactFilter binds match (a DML's Match: SELECT count(*) FROM target
// WHERE pred) with args, the WHERE clause's parameters, and converts its
// whole WHERE clause to an Iceberg filter over the target as the bind
// pinned it (read); exact is false when some of it does not convert
// exactly (merge-on-read deletes need an exact filter).
func (p *Planner) ExactFilter(ctx context.Context, sess Session, tgt *WriteTarget, match *parse.Statement, args []any) (read *catalog.Pinned, expr iceberg.BooleanExpression, exact bool, err error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	defer conn.Close()
	mb, err := p.bind(ctx, conn, sess, match, true, args...)
	if err != nil {
		return nil, nil, false, err
	}
	if len(mb.inputs) != 1 || mb.inputs[0].ref != tgt.Ref {
		return nil, nil, false, nil
	}
	root, _ := mb.ast.root["node"].(node)
	where, _ := root["where_clause"].(node)
	if where == nil {
		return nil, nil, false, nil
	}
	in, expr, exact := columnResolver{inputs: mb.inputs, aliases: mb.aliases}.convert(where)
	if expr == nil || !exact || in != mb.inputs[0] {
		return nil, nil, false, nil
	}
	return in.pinned, expr, true, nil
}

// planUpdate plans UPDATE name SET col = expr, … [WHERE pred] as a
// copy-on-write rewrite: every data file with a matching row is rewritten
// with the new values. args bind the parameters of SET and WHERE.
func (p *Planner) planUpdate(ctx context.Context, sess Session, st *parse.Statement, pu *parse.Update, args []any) (*DML, error) {
	u := updateTextOf(pu)
	tgt, conn, err := p.targetConn(ctx, sess, u.parts, authz.Update)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out, match, where, err := updateSQL(ctx, conn, tgt, quotedName(u.parts), u)
	if err != nil {
		return nil, err
	}
	matchArgs := args
	if _, n, _ := paramNodes(where); n == 0 {
		matchArgs = nil // the placeholders are all in SET
	}
	return &DML{Target: tgt, Match: built(st, match), Where: where != nil,
		rewrite: rewriteSQL{out: built(st, out), match: built(st, match), outArgs: args, matchArgs: matchArgs}}, nil
}

// rewriteSQL are the statements of a copy-on-write rewrite and the
// values of their placeholders.
type rewriteSQL struct {
	out, match         *parse.Statement
	outArgs, matchArgs []any
	// broadcast lets the statements read tables other than the target
	// (a MERGE's source), which every fragment reads in full; it also
	// turns off pruning by the match statement's filter.
	broadcast bool
}

// updateText is an UPDATE as read: its table, its SET columns (in order,
// and by lower-case name the index of their expression) and expressions,
// and its WHERE clause ("" without one).
type updateText struct {
	parts, order []string
	set          map[string]int
	exprs        []string
	pred         string
}

// updateTextOf is the UPDATE as updateSQL prints it.
func updateTextOf(pu *parse.Update) updateText {
	u := updateText{parts: pu.Name, set: map[string]int{}, pred: pu.Where}
	for _, c := range pu.Set {
		u.set[strings.ToLower(c.Column)] = len(u.exprs)
		u.exprs = append(u.exprs, c.Expr)
		u.order = append(u.order, c.Column)
	}
	return u
}

// updateSQL prints an UPDATE's statements over name: out yields a file's
// rows with the new values, match counts the rows it changes. The client's
// expressions go in as DuckDB parsed them (template); where is the parsed
// WHERE clause (nil without one).
func updateSQL(ctx context.Context, conn *engine.Conn, tgt *WriteTarget, name string, u updateText) (out, match string, where node, err error) {
	schema := tgt.Pinned.Table.Schema()
	for _, c := range u.order {
		if _, ok := schema.FindFieldByNameCaseInsensitive(c); !ok {
			return "", "", nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, c)
		}
	}
	holes, where, err := dmlParts(ctx, conn, name, u.exprs, u.pred)
	if err != nil {
		return "", "", nil, err
	}
	// Hole i is SET expression i; hole len(exprs) the WHERE clause.
	updated := "true"
	if where != nil {
		updated = hole(len(holes))
		holes = append(holes, where)
	}
	sel, err := castColumns(schema, u.set, where != nil)
	if err != nil {
		return "", "", nil, err
	}
	out, match = "SELECT "+sel+lineageSelect(tgt, updated)+" FROM "+name, "SELECT count(*) FROM "+name
	if where != nil {
		match += " WHERE " + updated
	}
	if out, err = template(ctx, conn, out, holes); err != nil {
		return "", "", nil, err
	}
	if match, err = template(ctx, conn, match, holes); err != nil {
		return "", "", nil, err
	}
	return out, match, where, nil
}

// castColumns is the select list that yields the table's columns, in order,
// with the DuckDB types of their Iceberg types; a column in set takes the
// expression of its template hole (see template) where the WHERE clause
// (the hole after the SET expressions) holds, or everywhere without one.
func castColumns(schema *iceberg.Schema, set map[string]int, where bool) (string, error) {
	var cols []string
	pred := hole(len(set))
	for _, f := range schema.Fields() {
		typ, err := DuckTypeOf(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", f.Name, err)
		}
		q := engine.Quote(f.Name)
		i, ok := set[strings.ToLower(f.Name)]
		switch {
		case !ok:
			cols = append(cols, fmt.Sprintf("CAST(%s AS %s) AS %s", q, typ, q))
		case !where:
			cols = append(cols, fmt.Sprintf("CAST((%s) AS %s) AS %s", hole(i), typ, q))
		default:
			cols = append(cols, fmt.Sprintf("CASE WHEN coalesce((%s), false) THEN CAST((%s) AS %s) ELSE CAST(%s AS %s) END AS %s", pred, hole(i), typ, q, typ, q))
		}
	}
	return strings.Join(cols, ", "), nil
}

// lineageSelect is what a copy-on-write rewrite of a format-version 3
// table adds to its select list so that rows keep their lineage (the
// spec's rules for rows a writer moves): _row_id as it is, and
// _last_updated_sequence_number as it is for rows the statement leaves
// alone but NULL (the new commit's sequence number, by inheritance) where
// updated (SQL icefloe wrote, or a template hole) holds. Empty for other tables (and for v3 tables whose schema
// uses those names).
func lineageSelect(tgt *WriteTarget, updated string) string {
	if !hasLineage(&input{pinned: tgt.Pinned}) {
		return ""
	}
	lusn := engine.Quote(iceberg.LastUpdatedSequenceNumberColumnName)
	if updated != "" {
		lusn = "CASE WHEN coalesce((" + updated + "), false) THEN CAST(NULL AS BIGINT) ELSE " + lusn + " END"
	}
	return ", " + engine.Quote(iceberg.RowIDColumnName) + ", " + lusn + " AS " + engine.Quote(iceberg.LastUpdatedSequenceNumberColumnName)
}

// dataFileTasks are the tasks of one data file.
type dataFileTasks struct {
	file  iceberg.DataFile
	tasks []table.FileScanTask
	bytes int64
}

// Rewrite is the planned copy-on-write rewrite of a DML statement
// (PlanRewrite): one endpoint per group of whole data files of the
// target, each ticket's first scan holding its files and the rest full
// scans of the other tables the statement reads.
type Rewrite struct {
	// WritePlan is the rewrite's plan, its row-delta sink at the root,
	// and its fragments.
	WritePlan
	// MatchSQL counts a file's matching rows (wire.Write.MatchSQL): the
	// fragment rewrites only files with a match.
	MatchSQL string
	// Lineage says the rows keep their v3 row lineage
	// (wire.Write.Lineage).
	Lineage bool
	// Files are the data files an endpoint may replace, by path: a
	// fragment that reports another file replaced fails the statement.
	Files map[string]iceberg.DataFile
	// Filter selects every row of the target the statement may change
	// (its WHERE clause as the pruning filter, which over-approximates
	// it); nil is every row, and always for a MERGE, whose source decides
	// (DML.Keys). It is the commit's conflict filter.
	Filter iceberg.BooleanExpression
}

// PlanRewrite plans the copy-on-write rewrite of d: its out statement
// yields the new rows of a data file, its match statement counts the rows
// the statement affects in it. Files the WHERE clause cannot match are
// pruned; the others go to the workers whole. Tables other than the
// target that d reads (a MERGE's source) are read in full by every
// fragment. d.Target is pinned to the version read (on main), which the
// commit is made against. nil, and no error, when no file can match.
// Under a dry run it notes the files read.
func (p *Planner) PlanRewrite(ctx context.Context, sess Session, d *DML) (*Rewrite, error) {
	tgt, q := d.Target, d.rewrite
	workers := p.opts.Workers.Live()
	if len(workers) == 0 {
		return nil, fmt.Errorf("%w: no worker is serving; check the workers' health", ErrNoWorkers)
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ob, err := p.bind(ctx, conn, sess, q.out, true, q.outArgs...)
	if err != nil {
		return nil, err
	}
	mconn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer mconn.Close()
	views := map[catalog.TableRef]string{}
	for _, o := range ob.inputs {
		if o.snapshot == 0 && o.meta == "" {
			views[o.ref] = o.view
		}
	}
	mb, err := p.bind(withViewNames(ctx, views), mconn, sess, q.match, true, q.matchArgs...)
	if err != nil {
		return nil, err
	}
	in, others, err := rewriteInputs(tgt, ob, mb, q.broadcast)
	if err != nil {
		return nil, err
	}
	lineage := hasLineage(in)
	if tgt.Branch == "" {
		tgt.Pinned = in.pinned // commit against the version read
	}
	tbl := in.pinned.Table
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	// Files the WHERE clause cannot match are pruned; the others are read
	// whole (no residual filter) so their unmatched rows survive.
	var candidates map[string]bool
	var filter iceberg.BooleanExpression
	if f := mb.inputs[0].filter; f != nil && !q.broadcast {
		filter = f
		// An error here is iceberg-go failing to read the metrics of files
		// written before a type widening: then nothing is pruned.
		if tasks, err := tbl.Scan(table.WithRowFilter(f)).PlanFiles(ctx); err == nil {
			candidates = map[string]bool{}
			for _, t := range tasks {
				candidates[t.File.FilePath()] = true
			}
		}
	}
	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of %s: %w", tgt.Ref, err)
	}
	files, byPath := filesOf(all, candidates)
	if len(files) == 0 {
		return nil, nil
	}
	if d := DryRunOf(ctx); d != nil {
		every, _ := filesOf(all, nil)
		d.Note("read", "%d of %d data files of %s may hold a matching row; each is read whole", len(files), len(every), tgt.Ref)
		for _, f := range files {
			d.Note("file", "%s (%d bytes)", f.file.FilePath(), f.bytes)
		}
	}
	var full []wire.Scan
	for _, o := range others {
		if err := p.planFiles(ctx, o); err != nil {
			return nil, err
		}
		scan, err := encodeScan(o, o.tasks)
		if err != nil {
			return nil, err
		}
		full = append(full, scan)
	}
	w := p.NewWrite(tgt)
	w.Rewrite, w.MatchSQL, w.Lineage = true, mb.sql, lineage
	endpoints, groups, err := p.rewriteEndpoints(ctx, workers, in, files, full, ob, w)
	if err != nil {
		return nil, err
	}
	rw := &Rewrite{MatchSQL: mb.sql, Lineage: lineage, Files: make(map[string]iceberg.DataFile, len(byPath)), Filter: filter,
		WritePlan: WritePlan{Write: w, Endpoints: endpoints,
			Tree: &plan.Write{Sink: plan.SinkRowDelta, Table: tgt.Ref.String(), Snapshot: headOf(tgt), Fragments: len(endpoints),
				In: wholeFilesPlan("rewrite", tgt.Ref.String(), ob.sql, groups)}}}
	for path, f := range byPath {
		rw.Files[path] = f.file
	}
	return rw, nil
}

// rewriteInputs finds the target among the tables a rewrite's statements
// read, and the others (allowed only with broadcast); both statements must
// read the same tables under the same views.
func rewriteInputs(tgt *WriteTarget, ob, mb *bound, broadcast bool) (*input, []*input, error) {
	var in *input
	var others []*input
	for _, x := range ob.inputs {
		switch {
		case x.ref != tgt.Ref:
			others = append(others, x)
		case in != nil:
			return nil, nil, fmt.Errorf("%w: a statement that reads its target %s twice", ErrUnsupported, tgt.Ref)
		default:
			in = x
		}
	}
	if in == nil {
		return nil, nil, fmt.Errorf("%w: the statement does not read its target %s", ErrInvalid, tgt.Ref)
	}
	if len(others) > 0 && !broadcast {
		return nil, nil, fmt.Errorf("%w: DELETE or UPDATE reading tables other than its target", ErrUnsupported)
	}
	for _, m := range mb.inputs {
		if !slices.ContainsFunc(ob.inputs, func(o *input) bool { return o.view == m.view && o.ref == m.ref }) {
			return nil, nil, fmt.Errorf("%w: DELETE or UPDATE reading tables other than its target", ErrUnsupported)
		}
	}
	return in, others, nil
}

// rewriteEndpoints packs whole files into one endpoint per group, each
// ticket carrying w; each ticket's first scan holds its files, the rest
// are full scans of the other tables the statement reads. It returns the
// groups' figures too, for the plan.
func (p *Planner) rewriteEndpoints(ctx context.Context, workers []Worker, in *input, files []*dataFileTasks, full []wire.Scan, ob *bound, w *wire.Write) ([]Endpoint, []plan.Group, error) {
	var total int64
	singles := make([][]*dataFileTasks, len(files))
	for i, f := range files {
		total += f.bytes
		singles[i] = []*dataFileTasks{f}
	}
	var scans [][]wire.Scan
	var groups []plan.Group
	for _, frag := range packGroups(singles, targetGroups(workers, total, p.opts.TargetGroupBytes)) {
		var tasks []table.FileScanTask
		g := plan.Group{Files: len(frag)}
		for _, f := range frag {
			tasks = append(tasks, f.tasks...)
			g.Bytes += f.bytes
			g.Rows += f.file.Count()
		}
		scan, err := encodeScan(in, tasks)
		if err != nil {
			return nil, nil, err
		}
		// Whole files, every column (and the lineage columns of a v3
		// table, which a star leaves out).
		scan.Columns, scan.RowFilter = nil, ""
		if hasLineage(in) {
			scan.Columns = in.cols
		}
		scans = append(scans, append([]wire.Scan{scan}, full...))
		groups = append(groups, g)
	}
	endpoints, err := p.sinkBuilder(ctx, workers, w, ob.schema).sinkFragments(scans, ob.sql, ob.schema)
	return endpoints, groups, err
}
