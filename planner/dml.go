package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// dmlDelete runs DELETE FROM name [WHERE pred] copy-on-write: every data
// file with a matching row is rewritten without those rows (a file whose
// rows all match is dropped without a replacement), in one commit. args
// bind the WHERE clause's parameters.
func (p *Planner) dmlDelete(ctx context.Context, sess Session, ps *Parser, args []any) (int64, error) {
	parts, pred, err := ps.deleteParts()
	if err != nil {
		return 0, err
	}
	tgt, conn, err := p.targetConn(ctx, sess, parts, authz.Delete)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	keep, match, err := deleteSQL(ctx, conn, tgt, quotedName(parts), pred)
	if err != nil {
		return 0, err
	}
	md := tgt.Pinned.Table.Metadata()
	if pred != "" && md.Version() >= 2 && md.Properties().Get(table.WriteDeleteModeKey, "") == table.WriteModeMergeOnRead {
		if n, ok, err := p.deleteEquality(ctx, sess, tgt, match, args); ok || err != nil {
			return n, err
		}
		n, ok, err := p.deleteMergeOnRead(ctx, sess, tgt, match, args)
		if ok || err != nil {
			return n, err
		}
	}
	return p.rewrite(ctx, sess, tgt, rewriteSQL{out: keep, match: match, outArgs: args, matchArgs: args})
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

// deleteParts reads DELETE FROM name [WHERE pred].
func (ps *Parser) deleteParts() (parts []string, pred string, err error) {
	ps.Pos = 1
	if !ps.Accept("FROM") {
		return nil, "", ps.Unexpected()
	}
	if parts, err = ps.Name(3); err != nil {
		return nil, "", err
	}
	pred, err = ps.where("DELETE")
	return parts, pred, err
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

// deleteMergeOnRead runs a DELETE on a table whose write.delete.mode is
// merge-on-read with iceberg-go's own delete: positional delete files (v2)
// or deletion vectors (v3) for partly matching files, whole-file removal
// for files that match entirely. It applies only when the WHERE clause
// converts exactly to an Iceberg filter; ok is false otherwise and the
// caller rewrites the files instead. The matching rows are counted on the
// coordinator with the same filter.
func (p *Planner) deleteMergeOnRead(ctx context.Context, sess Session, tgt *WriteTarget, match string, args []any) (n int64, ok bool, err error) {
	in, expr, exact, err := p.exactFilter(ctx, sess, tgt, match, args)
	if err != nil || !exact {
		return 0, false, err
	}
	if tgt.Branch == "" {
		tgt.Pinned = in.pinned // commit against the version read
	}
	tbl := in.pinned.Table
	if tbl.CurrentSnapshot() == nil {
		return 0, true, nil
	}
	first := tbl.Schema().Fields()[0].Name
	// A count that iceberg-go cannot make (e.g. metrics of files written
	// before a type widening) sends the DELETE to copy-on-write.
	_, recs, err := tbl.Scan(table.WithRowFilter(expr), table.WithSelectedFields(first)).ToArrowRecords(ctx)
	if err != nil {
		return 0, false, nil
	}
	for rec, err := range recs {
		if err != nil {
			return 0, false, nil
		}
		n += rec.NumRows()
		rec.Release()
	}
	if n == 0 {
		return 0, true, nil
	}
	if d := DryRunOf(ctx); d != nil {
		d.Note("rows", "%d rows of %s match", n, tgt.Ref)
		return 0, true, d.Commit("delete (merge-on-read): positional deletes (v2) or deletion vectors (v3) for files that match in part, removal of files that match whole, in one snapshot")
	}
	err = p.Commit(ctx, tgt, func(tx *table.Transaction) error {
		return tx.Delete(ctx, expr, nil, table.WithDeleteCaseInsensitive())
	}, nil)
	if err != nil {
		return 0, true, err
	}
	return n, true, nil
}

// exactFilter binds match (SELECT count(*) FROM target WHERE pred) with
// args, the WHERE clause's parameters, and converts its whole WHERE clause
// to an Iceberg filter; exact is false when some of it does not convert
// exactly.
func (p *Planner) exactFilter(ctx context.Context, sess Session, tgt *WriteTarget, match string, args []any) (in *input, expr iceberg.BooleanExpression, exact bool, err error) {
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
	in, expr, exact = columnResolver{inputs: mb.inputs, aliases: mb.aliases}.convert(where)
	if expr == nil || !exact || in != mb.inputs[0] {
		return nil, nil, false, nil
	}
	return in, expr, true, nil
}

// dmlUpdate runs UPDATE name SET col = expr, … [WHERE pred]
// copy-on-write: every data file with a matching row is rewritten with the
// new values, in one commit. args bind the parameters of SET and WHERE.
func (p *Planner) dmlUpdate(ctx context.Context, sess Session, ps *Parser, args []any) (int64, error) {
	u, err := ps.updateParts()
	if err != nil {
		return 0, err
	}
	tgt, conn, err := p.targetConn(ctx, sess, u.parts, authz.Update)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	out, match, where, err := updateSQL(ctx, conn, tgt, quotedName(u.parts), u)
	if err != nil {
		return 0, err
	}
	matchArgs := args
	if _, n, _ := paramNodes(where); n == 0 {
		matchArgs = nil // the placeholders are all in SET
	}
	return p.rewrite(ctx, sess, tgt, rewriteSQL{out: out, match: match, outArgs: args, matchArgs: matchArgs})
}

// rewriteSQL are the statements of a copy-on-write rewrite and the
// values of their placeholders.
type rewriteSQL struct {
	out, match         string
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

// updateParts reads UPDATE name SET col = expr, … [WHERE pred].
func (ps *Parser) updateParts() (updateText, error) {
	u := updateText{set: map[string]int{}}
	ps.Pos = 1
	var err error
	if u.parts, err = ps.Name(3); err != nil {
		return u, err
	}
	if !ps.Accept("SET") {
		return u, ps.Unexpected()
	}
	for {
		col, err := ps.Ident()
		if err != nil {
			return u, err
		}
		if !ps.AcceptPunct("=") {
			return u, ps.Unexpected()
		}
		from, depth := ps.Pos, 0
		for ps.Pos < len(ps.toks) {
			t := ps.toks[ps.Pos]
			if depth == 0 && (t.IsOp(",") || t.Is("WHERE") || t.Is("FROM") || t.Is("RETURNING")) {
				break
			}
			switch {
			case t.IsOp("("):
				depth++
			case t.IsOp(")"):
				depth--
			}
			ps.Pos++
		}
		if ps.Pos == from {
			return u, ps.Unexpected()
		}
		key := strings.ToLower(col)
		if _, dup := u.set[key]; dup {
			return u, fmt.Errorf("%w: column %q is set twice", ErrInvalid, col)
		}
		u.set[key] = len(u.exprs)
		u.exprs = append(u.exprs, ps.Text(from, ps.Pos-1))
		u.order = append(u.order, col)
		if !ps.AcceptPunct(",") {
			break
		}
	}
	if ps.At("FROM") {
		return u, fmt.Errorf("%w: UPDATE … FROM", ErrUnsupported)
	}
	u.pred, err = ps.where("UPDATE")
	return u, err
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

// where reads an optional trailing "WHERE pred" and returns pred's text.
func (p *Parser) where(stmt string) (string, error) {
	if p.Pos >= len(p.toks) {
		return "", nil
	}
	if p.At("USING") || p.At("RETURNING") {
		return "", fmt.Errorf("%w: %s … %s", ErrUnsupported, stmt, strings.ToUpper(p.toks[p.Pos].Value))
	}
	if !p.Accept("WHERE") || p.Pos >= len(p.toks) {
		return "", p.Unexpected()
	}
	depth := 0
	for j := p.Pos; j < len(p.toks); j++ {
		t := p.toks[j]
		switch {
		case t.IsOp("("):
			depth++
		case t.IsOp(")"):
			depth--
		case depth == 0 && t.Is("RETURNING"):
			return "", fmt.Errorf("%w: %s … RETURNING", ErrUnsupported, stmt)
		}
	}
	return p.Text(p.Pos, len(p.toks)-1), nil
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

// rewrite runs a copy-on-write rewrite (rewriteFiles) and commits its
// files in one snapshot.
func (p *Planner) rewrite(ctx context.Context, sess Session, tgt *WriteTarget, q rewriteSQL) (int64, error) {
	rw, err := p.rewriteFiles(ctx, sess, tgt, q)
	if err != nil || len(rw.deleted) == 0 {
		return 0, err
	}
	if err := p.keepOrRemove(tgt, p.commitFiles(ctx, tgt, rw.deleted, rw.added), rw.added); err != nil {
		return 0, err
	}
	return rw.affected, nil
}

// rewritten is what a copy-on-write rewrite wrote, not yet committed: the
// data files it replaces, the files replacing them and how many rows the
// statement changed in them.
type rewritten struct {
	deleted, added []iceberg.DataFile
	affected       int64
}

// rewriteFiles runs the fragments of a copy-on-write rewrite: q.out
// yields the new rows of a data file, q.match counts the rows the
// statement affects in it. Files go to the workers whole; each rewrites
// the files with a match and reports them replaced. Tables other than the
// target that q reads (a MERGE's source, q.broadcast) are read in full by
// every fragment. Nothing is committed; on failure the files written are
// deleted.
func (p *Planner) rewriteFiles(ctx context.Context, sess Session, tgt *WriteTarget, q rewriteSQL) (*rewritten, error) {
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
		return &rewritten{}, nil
	}
	// Files the WHERE clause cannot match are pruned; the others are read
	// whole (no residual filter) so their unmatched rows survive.
	var candidates map[string]bool
	if f := mb.inputs[0].filter; f != nil && !q.broadcast {
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
		return &rewritten{}, nil
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
	endpoints, err := p.rewriteEndpoints(ctx, workers, in, files, full, ob)
	if err != nil {
		return nil, err
	}
	w := p.NewWrite(tgt)
	w.Rewrite, w.MatchSQL, w.Lineage = true, mb.sql, lineage
	res, err := p.RunWrite(ctx, tgt, w, endpoints)
	if err != nil {
		return nil, err
	}
	rw := &rewritten{added: res.Added, affected: res.Affected}
	for path := range res.Replaced {
		f, ok := byPath[path]
		if !ok {
			p.RemoveFiles(ctx, tgt, w.WriteUUID, res.Added)
			return nil, fmt.Errorf("%w: a worker replaced %s, which was not planned", ErrWriteFailed, path)
		}
		rw.deleted = append(rw.deleted, f.file)
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

// rewriteEndpoints packs whole files into one endpoint per group; each
// ticket's first scan holds its files, the rest are full scans of the
// other tables the statement reads.
func (p *Planner) rewriteEndpoints(ctx context.Context, workers []Worker, in *input, files []*dataFileTasks, full []wire.Scan, ob *bound) ([]Endpoint, error) {
	var total int64
	singles := make([][]*dataFileTasks, len(files))
	for i, f := range files {
		total += f.bytes
		singles[i] = []*dataFileTasks{f}
	}
	var groups [][]table.FileScanTask
	for _, frag := range packGroups(singles, targetGroups(workers, total, p.opts.TargetGroupBytes)) {
		var tasks []table.FileScanTask
		for _, f := range frag {
			tasks = append(tasks, f.tasks...)
		}
		groups = append(groups, tasks)
	}
	queryID := newQueryID(ctx)
	expires := time.Now().Add(p.opts.TicketTTL)
	schemaBytes := resultSchemaBytes(ob.schema)
	endpoints := make([]Endpoint, 0, len(groups))
	for i, g := range groups {
		scan, err := encodeScan(in, g)
		if err != nil {
			return nil, err
		}
		// Whole files, every column (and the lineage columns of a v3
		// table, which a star leaves out).
		scan.Columns, scan.RowFilter = nil, ""
		if hasLineage(in) {
			scan.Columns = in.cols
		}
		scans := append([]wire.Scan{scan}, full...)
		sealed, err := p.seal(stampOf(ctx), &wire.Ticket{QueryID: queryID, ExpiresAt: expires, Scans: scans, SQL: ob.sql, Schema: schemaBytes})
		if err != nil {
			return nil, err
		}
		endpoints = append(endpoints, Endpoint{Ticket: sealed, Locations: []string{workers[i%len(workers)].Location}})
	}
	return endpoints, nil
}
