package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/icefloe/icefloe/catalog"
)

// shortcutCmd is a backslash (psql) or dot (DuckDB CLI) command: help,
// quit, an unknown command, or the SHOW or DESCRIBE statement it stands
// for.
type shortcutCmd struct {
	kind string // help, sql, unknown
	sql  string // the statement, for kind sql
	arg  string // the unknown command
	quit bool
}

// shortcut recognises a command line: \q, \?, \l, \dn, \dt, \d and their
// dot forms; a bare exit, quit or help too.
func shortcut(text string) (shortcutCmd, bool) {
	f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(text), ";"))
	if len(f) == 0 {
		return shortcutCmd{}, false
	}
	arg := strings.Join(f[1:], " ")
	show := func(stmt string) (shortcutCmd, bool) { return shortcutCmd{kind: "sql", sql: stmt}, true }
	switch strings.ToLower(f[0]) {
	case `\q`, `\quit`, ".quit", ".exit":
		return shortcutCmd{quit: true}, true
	case "exit", "quit":
		return shortcutCmd{quit: true}, len(f) == 1
	case "help":
		return shortcutCmd{kind: "help"}, len(f) == 1
	case `\?`, `\h`, `\help`, ".help":
		return shortcutCmd{kind: "help"}, true
	case `\l`, `\list`, ".catalogs", ".databases":
		return show("SHOW CATALOGS")
	case `\dn`:
		return show(showSQL("SHOW SCHEMAS", arg))
	case `\dt`, ".tables":
		return show(showSQL("SHOW TABLES", arg))
	case `\d`, ".schema":
		if arg == "" {
			return show("SHOW TABLES")
		}
		return show("DESCRIBE " + arg)
	}
	if strings.HasPrefix(f[0], `\`) {
		return shortcutCmd{kind: "unknown", arg: f[0]}, true
	}
	return shortcutCmd{}, false
}

// showSQL is a SHOW statement for a [container.]pattern argument: the
// part after the last dot is a LIKE pattern, what comes before it the
// catalog or schema to list (as typed, so quoted names stay quoted).
func showSQL(show, arg string) string {
	if arg == "" {
		return show
	}
	from, pattern := "", arg
	if i := strings.LastIndex(arg, "."); i >= 0 {
		from, pattern = arg[:i], arg[i+1:]
	}
	if from != "" {
		show += " FROM " + from
	}
	if pattern != "" {
		show += " LIKE '" + strings.ReplaceAll(pattern, "'", "''") + "'"
	}
	return show
}

// runShortcut prints the help or runs the statement a shortcut stands for,
// as if it had been typed.
func (c *sqlClient) runShortcut(ctx context.Context, intr *interrupts, opts sqlFlags, cmd shortcutCmd, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	switch cmd.kind {
	case "help":
		_, err := io.WriteString(out, replHelp)
		return errors.Join(err, out.Flush())
	case "unknown":
		return fmt.Errorf(`unknown command %s (\? lists them)`, cmd.arg)
	}
	return c.runCancellable(ctx, intr, opts.timeout, c.statement(cmd.sql), w, out, stderr)
}

// fetchInfo prints the stream a metadata call answered.
func (c *sqlClient) fetchInfo(ctx context.Context, info *flight.FlightInfo, err error, w resultWriter) error {
	if err != nil {
		return rpcErr(err)
	}
	schema, err := flight.DeserializeSchema(info.GetSchema(), c.alloc)
	if err != nil {
		return fmt.Errorf("read result schema: %w", err)
	}
	return c.fetch(ctx, info.GetEndpoint(), schema, w)
}

// tableInfo is one table GetTables listed, with its columns when asked.
type tableInfo struct {
	catalog, schema, name string
	columns               *arrow.Schema
}

// listTables lists the tables o asks for.
func (c *sqlClient) listTables(ctx context.Context, o *flightsql.GetTablesOpts) ([]tableInfo, error) {
	info, err := c.cl.GetTables(ctx, o)
	col := &collectWriter{}
	if err := c.fetchInfo(ctx, info, err, col); err != nil {
		return nil, err
	}
	var out []tableInfo
	for _, rec := range col.recs {
		str := func(name string, i int) string {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 || rec.Column(idx[0]).IsNull(i) {
				return ""
			}
			return cellText(rec.Column(idx[0]), i)
		}
		for i := range int(rec.NumRows()) {
			t := tableInfo{catalog: str("catalog_name", i), schema: str("db_schema_name", i), name: str("table_name", i)}
			if idx := rec.Schema().FieldIndices("table_schema"); len(idx) > 0 && o.IncludeSchema {
				if b, ok := rec.Column(idx[0]).(*array.Binary); ok && !b.IsNull(i) {
					if s, err := flight.DeserializeSchema(b.Value(i), c.alloc); err == nil {
						t.columns = s
					}
				}
			}
			out = append(out, t)
		}
		rec.Release()
	}
	return out, nil
}

// collectWriter keeps the batches of a result (the caller releases them).
type collectWriter struct{ recs []arrow.RecordBatch }

func (c *collectWriter) begin(*arrow.Schema) error { return nil }
func (c *collectWriter) write(rec arrow.RecordBatch) error {
	rec.Retain()
	c.recs = append(c.recs, rec)
	return nil
}
func (c *collectWriter) end() error           { return nil }
func (c *collectWriter) affected(int64) error { return nil }

// sessionName is the prompt's catalog.schema: the session's, as the
// coordinator reports it, else the flags', else the server defaults.
func (c *sqlClient) sessionName(ctx context.Context, o sqlFlags) string {
	cat, sch := o.catalog, o.schema
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	if res, err := c.cl.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{}); err == nil {
		if v := res.GetSessionOptions()["catalog"]; v.GetStringValue() != "" {
			cat = v.GetStringValue()
		}
		if v := res.GetSessionOptions()["schema"]; v.GetStringValue() != "" {
			sch = v.GetStringValue()
		}
	}
	if cat == "" {
		cat = catalog.LocalCatalogName
	}
	if sch == "" {
		sch = catalog.DefaultSchema
	}
	return cat + "." + sch
}

// sqlWords are completed besides the tables and columns.
var sqlWords = strings.Fields(`SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT OFFSET JOIN LEFT RIGHT
FULL INNER OUTER CROSS ON USING AS AND OR NOT NULL IS IN BETWEEN LIKE ILIKE CASE WHEN THEN ELSE END
DISTINCT UNION ALL EXCEPT INTERSECT WITH INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP
ALTER ADD COLUMN RENAME EXPLAIN DESC ASC COUNT SUM AVG MIN MAX CAST TRUE FALSE SCHEMA IF EXISTS AT`)

// completer completes the word before the cursor with SQL words, table
// names (plain and qualified) and column names.
type completer struct{ names []string }

// load fetches the tables and their columns, best effort (a few seconds at
// most: completion must not hold up the prompt).
func (cp *completer) load(ctx context.Context, c *sqlClient) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tables, err := c.listTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		return
	}
	seen := map[string]bool{}
	var names []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, t := range tables {
		add(t.name)
		add(t.schema + "." + t.name)
		add(t.catalog + "." + t.schema + "." + t.name)
		if t.columns != nil {
			for _, f := range t.columns.Fields() {
				add(f.Name)
			}
		}
	}
	sort.Strings(names)
	cp.names = names
}

// complete is a liner.WordCompleter.
func (cp *completer) complete(line string, pos int) (head string, completions []string, tail string) {
	start := pos
	for start > 0 && isWordByte(line[start-1]) {
		start--
	}
	head, word, tail := line[:start], line[start:pos], line[pos:]
	if word == "" {
		return head, nil, tail
	}
	lower := strings.ToLower(word) == word
	for _, kw := range sqlWords {
		if strings.HasPrefix(kw, strings.ToUpper(word)) {
			if lower {
				kw = strings.ToLower(kw)
			}
			completions = append(completions, kw+" ")
		}
	}
	for _, n := range cp.names {
		if strings.HasPrefix(strings.ToLower(n), strings.ToLower(word)) {
			completions = append(completions, n)
		}
	}
	return head, slices.Compact(completions), tail
}

func isWordByte(b byte) bool {
	return b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
