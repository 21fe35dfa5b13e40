package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// The statements that describe what a session can see, each answered as a
// query over values icefloe builds from the catalogs (see infoschema.go):
//
//	SHOW CATALOGS [LIKE p]                      Catalog (Trino)
//	SHOW DATABASES                              database_name (DuckDB)
//	SHOW SCHEMAS [FROM|IN c] [LIKE p]           Schema (Trino)
//	SHOW TABLES [FROM|IN [c.]s] [LIKE p]        name (DuckDB)
//	SHOW COLUMNS FROM|IN t [LIKE p]             Column, Type, Extra, Comment (Trino)
//	SHOW CREATE TABLE t                         Create Table (Trino)
//	DESCRIBE|DESC t, DESCRIBE|DESC <query>      column_name, column_type, null, key, default, extra (DuckDB)
//
// SUMMARIZE runs as DuckDB's own over the resolved tables (refuse.go lets
// it through). Names resolve as in queries (names.go).

// showQuery returns the query that answers a SHOW or DESCRIBE statement;
// ok is false for any other statement.
func (p *Planner) showQuery(ctx context.Context, s Session, query string) (sql string, ok bool, err error) {
	toks, err := ddlTokens(query)
	if err != nil || len(toks) == 0 {
		return "", false, nil
	}
	ps := &Parser{src: query, toks: toks}
	quoted := quotedIdents(query)
	switch {
	case ps.Accept("DESCRIBE"), ps.Accept("DESC"):
		if ps.AtQuery() || ps.At("VALUES") {
			sql, err = p.describeQuery(ctx, s, query[toks[1].Pos:])
			return sql, true, err
		}
		sql, err = p.showColumns(ctx, s, ps, quoted, false)
	case ps.Accept("SHOW", "CATALOGS"):
		sql, err = p.showCatalogs(ctx, ps, "Catalog")
	case ps.Accept("SHOW", "DATABASES"):
		sql, err = p.showCatalogs(ctx, ps, "database_name")
	case ps.Accept("SHOW", "SCHEMAS"):
		sql, err = p.showSchemas(ctx, s, ps, quoted)
	case ps.Accept("SHOW", "TABLES"):
		sql, err = p.showTables(ctx, s, ps, quoted)
	case ps.Accept("SHOW", "COLUMNS"):
		if !ps.Accept("FROM") && !ps.Accept("IN") {
			return "", true, ps.Unexpected()
		}
		sql, err = p.showColumns(ctx, s, ps, quoted, true)
	case ps.Accept("SHOW", "CREATE", "TABLE"):
		sql, err = p.showCreateTable(ctx, s, ps, quoted)
	case ps.At("SHOW"):
		return "", true, fmt.Errorf("%w: %s; icefloe has SHOW CATALOGS, SCHEMAS, TABLES, COLUMNS and CREATE TABLE", ErrUnsupported, strings.TrimRight(ps.Text(0, min(1, len(toks)-1)), ";"))
	default:
		return "", false, nil
	}
	return sql, true, err
}

// like reads an optional LIKE 'pattern' and the end of the statement, and
// returns the filter on col ("" for none).
func (ps *Parser) like(col string) (string, error) {
	var where string
	if ps.Accept("LIKE") {
		if ps.Pos >= len(ps.toks) || ps.toks[ps.Pos].Kind != sqltok.String {
			return "", ps.Unexpected()
		}
		where = " WHERE " + engine.Quote(col) + " LIKE " + engine.QuoteString(ps.toks[ps.Pos].Value)
		ps.Pos++
	}
	return where, ps.End()
}

// listing is a one-column, sorted answer.
func listing(col string, names []string, where string) string {
	rows := make([]infoRow, len(names))
	for i, n := range names {
		rows[i] = infoRow{n}
	}
	return "SELECT * FROM (" + valuesSQL([]infoColumn{{col, "VARCHAR"}}, rows) + ") AS listing" + where + " ORDER BY 1"
}

func (p *Planner) showCatalogs(ctx context.Context, ps *Parser, col string) (string, error) {
	where, err := ps.like(col)
	if err != nil {
		return "", err
	}
	return listing(col, p.visibleCatalogs(ctx), where), nil
}

func (p *Planner) showSchemas(ctx context.Context, s Session, ps *Parser, quoted map[string]bool) (string, error) {
	cat := s.Catalog
	if ps.Accept("FROM") || ps.Accept("IN") {
		c, err := ps.Ident()
		if err != nil {
			return "", err
		}
		cat = c
	}
	where, err := ps.like("Schema")
	if err != nil {
		return "", err
	}
	if cat, err = p.resolveCatalog(ctx, cat, quoted[cat]); err != nil {
		return "", err
	}
	names, err := p.schemaNames(ctx, cat)
	if err != nil {
		return "", err
	}
	return listing("Schema", names, where), nil
}

func (p *Planner) showTables(ctx context.Context, s Session, ps *Parser, quoted map[string]bool) (string, error) {
	cat, sch := s.Catalog, s.Schema
	if ps.Accept("FROM") || ps.Accept("IN") {
		parts, err := ps.Name(2)
		if err != nil {
			return "", err
		}
		if len(parts) == 2 {
			cat, sch = parts[0], parts[1]
		} else {
			sch = parts[0]
		}
	}
	where, err := ps.like("name")
	if err != nil {
		return "", err
	}
	if cat, err = p.resolveCatalog(ctx, cat, quoted[cat]); err != nil {
		return "", err
	}
	if sch, err = p.resolveSchema(ctx, cat, sch, quoted[sch]); err != nil {
		return "", err
	}
	names, err := p.tableNames(ctx, cat, sch)
	if err != nil {
		return "", err
	}
	views, err := p.viewNames(ctx, cat, sch)
	if err != nil {
		return "", err
	}
	names = append(names, views...)
	slices.Sort(names)
	return listing("name", names, where), nil
}

// tableArg reads a table name and resolves it.
func (p *Planner) tableArg(ctx context.Context, s Session, ps *Parser, quoted map[string]bool) (catalog.TableRef, error) {
	parts, err := ps.Name(3)
	if err != nil {
		return catalog.TableRef{}, err
	}
	ref, err := TableName(s, parts)
	if err != nil {
		return ref, err
	}
	return p.resolveRef(ctx, ref, quoted)
}

// loadResolved loads a resolved table, checking SELECT on it.
func (p *Planner) loadResolved(ctx context.Context, ref catalog.TableRef) (*table.Table, error) {
	pinned, err := p.authorizedPin(ctx, Session{}, ref, nil)
	if err != nil {
		return nil, err
	}
	return pinned.Table, nil
}

// showColumns answers DESCRIBE t (DuckDB's columns) or SHOW COLUMNS FROM t
// (Trino's).
func (p *Planner) showColumns(ctx context.Context, s Session, ps *Parser, quoted map[string]bool, trino bool) (string, error) {
	ref, err := p.tableArg(ctx, s, ps, quoted)
	if err != nil {
		return "", err
	}
	where := ""
	if trino {
		where, err = ps.like("Column")
	} else {
		err = ps.End()
	}
	if err != nil {
		return "", err
	}
	tbl, err := p.loadResolved(ctx, ref)
	if err != nil {
		return "", err
	}
	var rows []infoRow
	for _, f := range tbl.Schema().Fields() {
		typ := duckTypeName(f.Type)
		if trino {
			rows = append(rows, infoRow{f.Name, typ, "", f.Doc})
			continue
		}
		null := "YES"
		if f.Required {
			null = "NO"
		}
		rows = append(rows, infoRow{f.Name, typ, null, nil, nil, nil})
	}
	cols := describeColumns
	if trino {
		cols = []infoColumn{{"Column", "VARCHAR"}, {"Type", "VARCHAR"}, {"Extra", "VARCHAR"}, {"Comment", "VARCHAR"}}
	}
	return "SELECT * FROM (" + valuesSQL(cols, rows) + ") AS listing" + where, nil
}

// describeColumns are the columns of DuckDB's DESCRIBE.
var describeColumns = []infoColumn{{"column_name", "VARCHAR"}, {"column_type", "VARCHAR"}, {"null", "VARCHAR"},
	{"key", "VARCHAR"}, {"default", "VARCHAR"}, {"extra", "VARCHAR"}}

// duckTypeName names an Iceberg type as DuckDB shows it.
func duckTypeName(t iceberg.Type) string {
	s, err := DuckTypeOf(t)
	if err != nil {
		return t.String()
	}
	return strings.ReplaceAll(s, "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")
}

// describeQuery answers DESCRIBE <query> from the query's bound result.
func (p *Planner) describeQuery(ctx context.Context, s Session, inner string) (string, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, s, inner, false)
	if err != nil {
		return "", err
	}
	var rows []infoRow
	for i, f := range b.schema.Fields() {
		typ := f.Type.String()
		if b.duckTypes != nil {
			typ = b.duckTypes[i]
		}
		rows = append(rows, infoRow{f.Name, typ, "YES", nil, nil, nil})
	}
	return "SELECT * FROM (" + valuesSQL(describeColumns, rows) + ") AS listing", nil
}

// showCreateTable answers the CREATE TABLE statement that makes the table
// again as it is now: columns, partition spec, sort order and properties,
// in icefloe's own DDL.
func (p *Planner) showCreateTable(ctx context.Context, s Session, ps *Parser, quoted map[string]bool) (string, error) {
	ref, err := p.tableArg(ctx, s, ps, quoted)
	if err != nil {
		return "", err
	}
	if err := ps.End(); err != nil {
		return "", err
	}
	tbl, err := p.loadResolved(ctx, ref)
	if err != nil {
		return "", err
	}
	ddl, err := createTableDDL(ref, tbl)
	if err != nil {
		return "", err
	}
	return valuesSQL([]infoColumn{{"Create Table", "VARCHAR"}}, []infoRow{{ddl}}), nil
}

// createTableDDL writes tbl's CREATE TABLE.
func createTableDDL(ref catalog.TableRef, tbl *table.Table) (string, error) {
	schema := tbl.Schema()
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s.%s.%s (\n", engine.Quote(ref.Catalog), engine.Quote(ref.Schema), engine.Quote(ref.Table))
	for i, f := range schema.Fields() {
		typ, err := DuckTypeOf(f.Type)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  %s %s", engine.Quote(f.Name), typ)
		if f.Required {
			b.WriteString(" NOT NULL")
		}
		if i < schema.NumFields()-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(")")
	if spec := tbl.Spec(); spec.NumFields() > 0 {
		var items []string
		for _, f := range spec.Fields() {
			col, ok := schema.FindColumnName(f.SourceID())
			if !ok {
				return "", fmt.Errorf("%w: partition field %s of %s has no source column", ErrInvalid, f.Name, ref)
			}
			items = append(items, partitionItem(f.Transform, quoteDotted(col)))
		}
		b.WriteString("\nPARTITIONED BY (" + strings.Join(items, ", ") + ")")
	}
	if so := tbl.SortOrder(); so.Len() > 0 {
		var items []string
		for _, f := range so.Fields() {
			col, ok := schema.FindColumnName(f.SourceID())
			if !ok {
				continue
			}
			item := quoteDotted(col)
			if f.Direction == table.SortDESC {
				item += " DESC"
			}
			if f.NullOrder == table.NullsFirst {
				item += " NULLS FIRST"
			} else {
				item += " NULLS LAST"
			}
			items = append(items, item)
		}
		b.WriteString("\nORDERED BY (" + strings.Join(items, ", ") + ")")
	}
	props := map[string]string{"format-version": fmt.Sprint(tbl.Metadata().Version())}
	for k, v := range tbl.Properties() {
		props[k] = v
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	})
	var kv []string
	for _, k := range keys {
		kv = append(kv, engine.QuoteString(k)+" = "+engine.QuoteString(props[k]))
	}
	b.WriteString("\nWITH (" + strings.Join(kv, ", ") + ")")
	return b.String(), nil
}

// partitionItem writes one PARTITIONED BY item as PartitionItem.Transform reads it.
func partitionItem(t iceberg.Transform, col string) string {
	switch t := t.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.BucketTransform:
		return fmt.Sprintf("bucket(%d, %s)", t.NumBuckets, col)
	case iceberg.TruncateTransform:
		return fmt.Sprintf("truncate(%d, %s)", t.Width, col)
	}
	return t.String() + "(" + col + ")"
}

// quoteDotted quotes each part of a dotted column path.
func quoteDotted(col string) string {
	parts := strings.Split(col, ".")
	for i, p := range parts {
		parts[i] = engine.Quote(p)
	}
	return strings.Join(parts, ".")
}
