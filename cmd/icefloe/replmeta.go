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

// shortcutCmd is a backslash (psql) or dot (DuckDB CLI) command.
type shortcutCmd struct {
	kind string // help, catalogs, schemas, tables, describe, unknown
	arg  string
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
	switch strings.ToLower(f[0]) {
	case `\q`, `\quit`, ".quit", ".exit":
		return shortcutCmd{quit: true}, true
	case "exit", "quit":
		return shortcutCmd{quit: true}, len(f) == 1
	case "help":
		return shortcutCmd{kind: "help"}, len(f) == 1
	case `\?`, `\h`, `\help`, ".help":
		return shortcutCmd{kind: "help"}, true
	case `\l`, `\list`, ".databases":
		return shortcutCmd{kind: "catalogs"}, true
	case `\dn`:
		return shortcutCmd{kind: "schemas", arg: arg}, true
	case `\dt`, ".tables":
		return shortcutCmd{kind: "tables", arg: arg}, true
	case `\d`, ".schema":
		if arg == "" {
			return shortcutCmd{kind: "tables"}, true
		}
		return shortcutCmd{kind: "describe", arg: arg}, true
	}
	if strings.HasPrefix(f[0], `\`) {
		return shortcutCmd{kind: "unknown", arg: f[0]}, true
	}
	return shortcutCmd{}, false
}

// runShortcut answers a shortcut with the Flight SQL metadata calls.
func (c *sqlClient) runShortcut(ctx context.Context, intr *interrupts, opts sqlFlags, cmd shortcutCmd, w resultWriter, out *bufio.Writer, stderr io.Writer) error {
	if cmd.kind == "help" {
		_, err := io.WriteString(out, replHelp)
		return errors.Join(err, out.Flush())
	}
	if cmd.kind == "unknown" {
		return fmt.Errorf(`unknown command %s (\? lists them)`, cmd.arg)
	}
	return c.runCancellable(ctx, intr, opts.timeout, func(ctx context.Context, w resultWriter) error {
		switch cmd.kind {
		case "catalogs":
			info, err := c.cl.GetCatalogs(ctx)
			return c.fetchInfo(ctx, info, err, w)
		case "schemas":
			o := &flightsql.GetDBSchemasOpts{}
			if cmd.arg != "" {
				o.DbSchemaFilterPattern = &cmd.arg
			}
			info, err := c.cl.GetDBSchemas(ctx, o)
			return c.fetchInfo(ctx, info, err, w)
		case "tables":
			info, err := c.cl.GetTables(ctx, tablesOpts(cmd.arg, false))
			return c.fetchInfo(ctx, info, err, w)
		}
		return c.describe(ctx, cmd.arg, w)
	}, w, out, stderr)
}

// tablesOpts asks for the tables a [catalog.][schema.]pattern names.
func tablesOpts(name string, withSchema bool) *flightsql.GetTablesOpts {
	o := &flightsql.GetTablesOpts{IncludeSchema: withSchema}
	if name == "" {
		return o
	}
	parts := strings.Split(name, ".")
	table := parts[len(parts)-1]
	o.TableNameFilterPattern = &table
	if len(parts) >= 2 {
		o.DbSchemaFilterPattern = &parts[len(parts)-2]
	}
	if len(parts) >= 3 {
		o.Catalog = &parts[len(parts)-3]
	}
	return o
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

// describe prints the columns of the tables name matches.
func (c *sqlClient) describe(ctx context.Context, name string, w resultWriter) error {
	tables, err := c.listTables(ctx, tablesOpts(name, true))
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		return fmt.Errorf("no table matches %q", name)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "table", Type: arrow.BinaryTypes.String},
		{Name: "column", Type: arrow.BinaryTypes.String},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "null", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(c.alloc, schema)
	defer b.Release()
	for _, t := range tables {
		if t.columns == nil {
			continue
		}
		for _, f := range t.columns.Fields() {
			null := "YES"
			if !f.Nullable {
				null = "NO"
			}
			for i, v := range []string{t.catalog + "." + t.schema + "." + t.name, f.Name, f.Type.String(), null} {
				b.Field(i).(*array.StringBuilder).Append(v)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.begin(schema); err != nil {
		return err
	}
	if err := w.write(rec); err != nil {
		return err
	}
	return w.end()
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
