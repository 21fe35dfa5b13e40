package planner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
)

// information_schema.schemata, .tables and .columns list the mounted
// catalogs, as far as the caller may see them. They are built on the
// coordinator from catalog listings and spliced into the query as a
// VALUES list icefloe writes from those values: no reference ever reaches
// DuckDB's own information_schema, which stays unreachable (refuse.go).

// infoColumn is one column of an information_schema table.
type infoColumn struct{ name, typ string }

var infoSchemaTables = map[string][]infoColumn{
	"schemata": {{"catalog_name", "VARCHAR"}, {"schema_name", "VARCHAR"}},
	"tables": {{"table_catalog", "VARCHAR"}, {"table_schema", "VARCHAR"}, {"table_name", "VARCHAR"},
		{"table_type", "VARCHAR"}},
	"columns": {{"table_catalog", "VARCHAR"}, {"table_schema", "VARCHAR"}, {"table_name", "VARCHAR"},
		{"column_name", "VARCHAR"}, {"ordinal_position", "INTEGER"}, {"column_default", "VARCHAR"},
		{"is_nullable", "VARCHAR"}, {"data_type", "VARCHAR"}, {"comment", "VARCHAR"}},
}

// infoRow is one row: nil is NULL, strings and ints as they are.
type infoRow []any

// infoSchemaTable replaces n with the information_schema table it names,
// and reports whether it did (or failed, with r.err set).
func (r *resolver) infoSchemaTable(ctx context.Context, n node) bool {
	cat, sch, name := str(n, "catalog_name"), str(n, "schema_name"), strings.ToLower(str(n, "table_name"))
	cols, ok := infoSchemaTables[name]
	if !ok || !strings.EqualFold(sch, "information_schema") {
		return false
	}
	cats := r.p.visibleCatalogs(ctx)
	if cat != "" {
		c, err := r.p.resolveCatalog(ctx, cat, r.b.quoted[cat])
		if err != nil {
			r.err = err
			return true
		}
		cats = []string{c}
	}
	rows, err := r.p.infoRows(ctx, name, cats)
	if err == nil {
		err = r.splice(ctx, n, name, cols, rows)
	}
	if err != nil {
		r.err = err
	}
	return true
}

// splice turns n into a subquery over rows, aliased as the table was.
func (r *resolver) splice(ctx context.Context, n node, name string, cols []infoColumn, rows []infoRow) error {
	sub, err := parseNode(ctx, r.conn, valuesSQL(cols, rows))
	if err != nil {
		return fmt.Errorf("information_schema.%s: %w", name, err)
	}
	alias := str(n, "alias")
	if alias == "" {
		alias = str(n, "table_name")
	}
	loc := n["query_location"]
	for k := range n {
		delete(n, k)
	}
	n["type"], n["alias"], n["sample"], n["query_location"] = "SUBQUERY", alias, nil, loc
	n["subquery"] = node{"node": sub, "named_param_map": []any{}}
	n["column_name_alias"] = []any{}
	return nil
}

// valuesSQL is a query whose result is rows, typed as cols.
func valuesSQL(cols []infoColumn, rows []infoRow) string {
	var sel, names []string
	for i, c := range cols {
		v := "c" + strconv.Itoa(i)
		names = append(names, v)
		sel = append(sel, "CAST("+v+" AS "+c.typ+") AS "+engine.Quote(c.name))
	}
	if len(rows) == 0 {
		nulls := make([]string, len(cols))
		for i := range nulls {
			nulls[i] = "NULL"
		}
		return "SELECT " + strings.Join(sel, ", ") + " FROM (VALUES (" + strings.Join(nulls, ", ") + ")) AS v(" +
			strings.Join(names, ", ") + ") WHERE false"
	}
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(sel, ", ") + " FROM (VALUES ")
	for i, row := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j, v := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(literal(v))
		}
		b.WriteString(")")
	}
	b.WriteString(") AS v(" + strings.Join(names, ", ") + ")")
	return b.String()
}

// literal writes one value of an infoRow as SQL.
func literal(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return engine.QuoteString(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return engine.QuoteString(x.UTC().Format("2006-01-02 15:04:05.999999") + "+00")
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("planner: information_schema value of type %T", v))
}

// infoRows lists the rows of information_schema.name over cats.
func (p *Planner) infoRows(ctx context.Context, name string, cats []string) ([]infoRow, error) {
	var rows []infoRow
	for _, cat := range cats {
		schemas, err := p.schemaNames(ctx, cat)
		if err != nil {
			return nil, err
		}
		for _, sch := range schemas {
			if name == "schemata" {
				rows = append(rows, infoRow{cat, sch})
				continue
			}
			tables, err := p.tableNames(ctx, cat, sch)
			if err != nil {
				return nil, err
			}
			if name == "tables" {
				views, err := p.viewNames(ctx, cat, sch)
				if err != nil {
					return nil, err
				}
				for _, v := range views {
					rows = append(rows, infoRow{cat, sch, v, "VIEW"})
				}
			}
			for _, t := range tables {
				ref := catalog.TableRef{Catalog: cat, Schema: sch, Table: t}
				if name == "tables" {
					rows = append(rows, infoRow{cat, sch, t, "BASE TABLE"})
					continue
				}
				cols, err := p.columnRows(ctx, ref)
				if err != nil {
					return nil, err
				}
				rows = append(rows, cols...)
			}
		}
	}
	return rows, nil
}

// columnRows are the information_schema.columns rows of one table; a
// table dropped since it was listed has none.
func (p *Planner) columnRows(ctx context.Context, ref catalog.TableRef) ([]infoRow, error) {
	mt, err := p.opts.Mounts.Get(ref.Catalog)
	if err != nil {
		return nil, nil
	}
	tbl, err := mt.Catalog.LoadTable(ctx, ref.Ident())
	if errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", ref, err)
	}
	var rows []infoRow
	for i, f := range tbl.Schema().Fields() {
		typ := duckTypeName(f.Type)
		nullable := "YES"
		if f.Required {
			nullable = "NO"
		}
		var doc any
		if f.Doc != "" {
			doc = f.Doc
		}
		rows = append(rows, infoRow{ref.Catalog, ref.Schema, ref.Table, f.Name, i + 1, nil, nullable, typ, doc})
	}
	return rows, nil
}
