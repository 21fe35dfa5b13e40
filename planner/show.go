package planner

import (
	"context"

	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
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

func init() {
	registerQuery(parse.KindShow, queryRunner{
		bind: func(p *Planner, ctx context.Context, s Session, st *parse.Statement, _ []any) (*arrow.Schema, error) {
			q, err := p.showQuery(ctx, s, st)
			if err != nil {
				return nil, err
			}
			return p.Bind(ctx, s, q)
		},
		plan: func(p *Planner, ctx context.Context, s Session, st *parse.Statement, _ []Worker, _ []any) (*Plan, error) {
			q, err := p.showQuery(ctx, s, st)
			if err != nil {
				return nil, err
			}
			return p.Plan(ctx, s, q)
		},
	})
}

// showQuery returns the query that answers a SHOW or DESCRIBE statement:
// SQL icefloe builds from the catalogs' values.
func (p *Planner) showQuery(ctx context.Context, s Session, st *parse.Statement) (*parse.Statement, error) {
	sh := st.Body.(*parse.Show)
	var sql string
	var err error
	switch sh.What {
	case parse.DescribeQuery:
		sql, err = p.describeQuery(ctx, s, sh.Query)
	case parse.DescribeTable:
		sql, err = p.showColumns(ctx, s, st, sh, false)
	case parse.ShowColumns:
		sql, err = p.showColumns(ctx, s, st, sh, true)
	case parse.ShowCatalogs:
		sql = listing("Catalog", p.visibleCatalogs(ctx), like("Catalog", sh))
	case parse.ShowDatabases:
		sql = listing("database_name", p.visibleCatalogs(ctx), like("database_name", sh))
	case parse.ShowSchemas:
		sql, err = p.showSchemas(ctx, s, st, sh)
	case parse.ShowTables:
		sql, err = p.showTables(ctx, s, st, sh)
	case parse.ShowCreateTable:
		sql, err = p.showCreateTable(ctx, s, st, sh)
	}
	if err != nil {
		return nil, err
	}
	return parse.Built(sql, nil), nil
}

// like is the filter on col of LIKE 'p' ("" for none).
func like(col string, sh *parse.Show) string {
	if sh.Like == nil {
		return ""
	}
	return " WHERE " + engine.Quote(col) + " LIKE " + engine.QuoteString(*sh.Like)
}

// listing is a one-column, sorted answer.
func listing(col string, names []string, where string) string {
	rows := make([]infoRow, len(names))
	for i, n := range names {
		rows[i] = infoRow{n}
	}
	return "SELECT * FROM (" + valuesSQL([]infoColumn{{col, "VARCHAR"}}, rows) + ") AS listing" + where + " ORDER BY 1"
}

func (p *Planner) showSchemas(ctx context.Context, s Session, st *parse.Statement, sh *parse.Show) (string, error) {
	cat := s.Catalog
	if sh.Name != nil {
		cat = sh.Name[0]
	}
	cat, err := p.resolveCatalog(ctx, cat, st.Quoted(cat))
	if err != nil {
		return "", err
	}
	names, err := p.schemaNames(ctx, cat)
	if err != nil {
		return "", err
	}
	return listing("Schema", names, like("Schema", sh)), nil
}

func (p *Planner) showTables(ctx context.Context, s Session, st *parse.Statement, sh *parse.Show) (string, error) {
	cat, sch := s.Catalog, s.Schema
	switch len(sh.Name) {
	case 2:
		cat, sch = sh.Name[0], sh.Name[1]
	case 1:
		sch = sh.Name[0]
	}
	cat, err := p.resolveCatalog(ctx, cat, st.Quoted(cat))
	if err != nil {
		return "", err
	}
	if sch, err = p.resolveSchema(ctx, cat, sch, st.Quoted(sch)); err != nil {
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
	return listing("name", names, like("name", sh)), nil
}

// tableArg resolves the table a SHOW statement names.
func (p *Planner) tableArg(ctx context.Context, s Session, st *parse.Statement, parts []string) (catalog.TableRef, error) {
	ref, err := TableName(s, parts)
	if err != nil {
		return ref, err
	}
	return p.resolveRef(ctx, ref, st.QuotedNames())
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
func (p *Planner) showColumns(ctx context.Context, s Session, st *parse.Statement, sh *parse.Show, trino bool) (string, error) {
	ref, err := p.tableArg(ctx, s, st, sh.Name)
	if err != nil {
		return "", err
	}
	where := ""
	if trino {
		where = like("Column", sh)
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
func (p *Planner) describeQuery(ctx context.Context, s Session, inner *parse.Statement) (string, error) {
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
func (p *Planner) showCreateTable(ctx context.Context, s Session, st *parse.Statement, sh *parse.Show) (string, error) {
	ref, err := p.tableArg(ctx, s, st, sh.Name)
	if err != nil {
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
