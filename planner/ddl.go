package planner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
)

// Commits returns the counters of the commits made for the planner's
// statements.
func (p *Planner) Commits() *commit.Stats { return &p.commits }

// ddlAlloc allocates the schemas of the tickets the planner builds for
// writes.
var ddlAlloc memory.Allocator = memory.DefaultAllocator

// ---- statements ----

// ParseColumns has DuckDB parse a CREATE TABLE column list (the text from
// "(" to ")", parentheses included) into a temp table called name on a connection of its own, and
// maps the columns it made to an Iceberg schema. The temp table carries the
// new table's name so DuckDB's messages read like the client's statement.
func (p *Planner) ParseColumns(ctx context.Context, name, columns string) (*iceberg.Schema, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.ExecChecked(ctx, duckdb.STATEMENT_TYPE_CREATE, "CREATE TEMP TABLE "+engine.Quote(name)+" "+columns); err != nil {
		return nil, DuckError(ctx, err)
	}
	rows, err := conn.DB().QueryContext(ctx,
		`SELECT constraint_type, constraint_text FROM duckdb_constraints()
		 WHERE database_name = 'temp' AND table_name = ? AND constraint_type <> 'NOT NULL' ORDER BY constraint_index`, name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var kind, text string
		if err := rows.Scan(&kind, &text); err != nil {
			rows.Close()
			return nil, err
		}
		rows.Close()
		return nil, fmt.Errorf("%w: %s constraint (%s): Iceberg tables have no constraints but NOT NULL", ErrUnsupported, kind, text)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	type column struct {
		name, typ string
		nullable  bool
		def       *string
	}
	var cols []column
	rows, err = conn.DB().QueryContext(ctx,
		`SELECT column_name, data_type, is_nullable, column_default FROM duckdb_columns()
		 WHERE database_name = 'temp' AND table_name = ? ORDER BY column_index`, name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ, &c.nullable, &c.def); err != nil {
			rows.Close()
			return nil, err
		}
		cols = append(cols, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	for _, c := range cols {
		if c.def != nil {
			return nil, fmt.Errorf("%w: column %q has a DEFAULT or generated value (%s)", ErrUnsupported, c.name, *c.def)
		}
	}
	var infos []duckdb.TypeInfo
	err = conn.Prepared(ctx, duckdb.STATEMENT_TYPE_SELECT, "SELECT * FROM "+engine.Quote(name), func(ds *duckdb.Stmt) error {
		n, err := ds.ColumnCount()
		if err != nil {
			return err
		}
		for i := range n {
			ti, err := ds.ColumnTypeInfo(i)
			if err != nil {
				return err
			}
			infos = append(infos, ti)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read column types: %w", err)
	}
	if len(infos) != len(cols) {
		return nil, fmt.Errorf("read column types: %d types for %d columns", len(infos), len(cols))
	}
	// Top-level columns take ids 1…n, nested fields the ids after them.
	// The catalog assigns fresh ids anyway; these only have to be unique.
	next := len(cols)
	nextID := func() int { next++; return next }
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		typ, err := ddlIcebergType(infos[i], nextID)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q has type %s: %v", ErrInvalid, c.name, c.typ, err)
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.name, Type: typ, Required: !c.nullable}
	}
	return iceberg.NewSchema(0, fields...), nil
}

// PartitionTransform maps a PARTITIONED BY item's transform name to
// iceberg-go's transform and the suffix of the partition field name
// (Iceberg Java's naming); errors wrap ErrInvalid.
func PartitionTransform(it parse.PartitionItem) (iceberg.Transform, string, error) {
	name := strings.ToLower(it.Transform)
	needArg := name == "bucket" || name == "truncate"
	if needArg != it.HasArg {
		if needArg {
			return nil, "", fmt.Errorf("%w: partition transform %s needs a number and a column, e.g. %s(16, %s)", ErrInvalid, it.Transform, name, it.Column)
		}
		return nil, "", fmt.Errorf("%w: partition transform %s takes only a column", ErrInvalid, it.Transform)
	}
	if needArg && it.Arg <= 0 {
		return nil, "", fmt.Errorf("%w: partition transform %s needs a positive number, got %d", ErrInvalid, it.Transform, it.Arg)
	}
	switch name {
	case "", "identity":
		return iceberg.IdentityTransform{}, "", nil
	case "year", "years":
		return iceberg.YearTransform{}, "_year", nil
	case "month", "months":
		return iceberg.MonthTransform{}, "_month", nil
	case "day", "days":
		return iceberg.DayTransform{}, "_day", nil
	case "hour", "hours":
		return iceberg.HourTransform{}, "_hour", nil
	case "bucket":
		return iceberg.BucketTransform{NumBuckets: it.Arg}, "_bucket", nil
	case "truncate":
		return iceberg.TruncateTransform{Width: it.Arg}, "_trunc", nil
	case "void":
		return iceberg.VoidTransform{}, "_null", nil
	}
	return nil, "", fmt.Errorf("%w: unknown partition transform %q", ErrInvalid, it.Transform)
}

// PartitionSpec builds the spec of PARTITIONED BY against schema.
func PartitionSpec(schema *iceberg.Schema, items []parse.PartitionItem) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, it := range items {
		tr, suffix, err := PartitionTransform(it)
		if err != nil {
			return iceberg.PartitionSpec{}, err
		}
		field, ok := schema.FindFieldByName(it.Column)
		if !ok {
			field, ok = schema.FindFieldByNameCaseInsensitive(it.Column)
		}
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition column %q is not a column of the table", ErrInvalid, it.Column)
		}
		if !tr.CanTransform(field.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition transform %s does not apply to column %q of type %s", ErrInvalid, tr, it.Column, field.Type)
		}
		full, _ := schema.FindColumnName(field.ID)
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(field.ID, full+suffix, tr, schema, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: PARTITIONED BY: %v", ErrInvalid, err)
	}
	if err := CheckDecimalPartitions(&spec, nil, schema); err != nil {
		return iceberg.PartitionSpec{}, err
	}
	return spec, nil
}

// CheckDecimalPartitions refuses, with ErrUnsupported, more than one
// decimal partition field in spec and added (a field ALTER TABLE adds, or
// nil) (identity or truncate of a decimal column): iceberg-go v0.7.0 gives the
// Avro type of every decimal partition value the one name "fixed"
// (internal/avro_schemas.go, DecimalNode), so no manifest of such a spec
// can be written and every write would fail at its commit.
func CheckDecimalPartitions(spec *iceberg.PartitionSpec, added *iceberg.PartitionField, schema *iceberg.Schema) error {
	fields := []iceberg.PartitionField{}
	for _, pf := range spec.Fields() {
		fields = append(fields, pf)
	}
	if added != nil {
		fields = append(fields, *added)
	}
	var names []string
	for _, pf := range fields {
		src, ok := schema.FindFieldByID(pf.SourceID())
		if !ok {
			continue
		}
		if _, dec := pf.Transform.ResultType(src.Type).(iceberg.DecimalType); dec {
			names = append(names, pf.Name)
		}
	}
	if len(names) > 1 {
		return fmt.Errorf("%w: PARTITIONED BY: more than one decimal partition field (%s) is not supported: its manifests cannot be written (identity or truncate of one decimal column, or bucket, are)",
			ErrUnsupported, strings.Join(names, ", "))
	}
	return nil
}

// CreateStandIn creates a temp table with the table's columns and types,
// and with notNull their NOT NULL constraints. It carries the table's own
// name so DuckDB's messages (e.g. "NOT NULL constraint failed: orders.id")
// name it; the quoted name is returned.
func CreateStandIn(ctx context.Context, conn *engine.Conn, ref catalog.TableRef, schema *iceberg.Schema, notNull bool) (string, error) {
	defs := make([]string, len(schema.Fields()))
	for i, f := range schema.Fields() {
		typ, err := DuckTypeOf(f.Type)
		if err != nil {
			return "", fmt.Errorf("%s: column %q: %w", ref, f.Name, err)
		}
		defs[i] = engine.Quote(f.Name) + " " + typ
		if f.Required && notNull {
			defs[i] += " NOT NULL"
		}
	}
	standIn := engine.Quote(ref.Table)
	if err := conn.Exec(ctx, "CREATE TEMP TABLE "+standIn+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return "", fmt.Errorf("%s: stand-in: %w", ref, err)
	}
	return standIn, nil
}

// ValuesSelect returns, for a VALUES clause of exactly one row, the SELECT
// of that row's expressions over the table params (whose columns are
// named $1, $2, …) with each placeholder $k read from its column $k,
// printed through DuckDB's AST (template), and the highest placeholder;
// "" when the clause has other rows or no placeholder. cols is the number
// of parameter columns. statement inserts every parameter row of an
// INSERT … VALUES with it in one statement.
func ValuesSelect(ctx context.Context, conn *engine.Conn, values, params string, cols int) (string, int, error) {
	root, err := parseNode(ctx, conn, values)
	if err != nil {
		return "", 0, err
	}
	from, _ := root["from_table"].(node)
	rows, _ := from["values"].([]any)
	if len(rows) != 1 {
		return "", 0, nil
	}
	exprs, _ := rows[0].([]any)
	refs := make([]string, cols)
	for i := range refs {
		refs[i] = engine.Quote(fmt.Sprintf("$%d", i+1))
	}
	refRoot, err := parseNode(ctx, conn, "SELECT "+strings.Join(refs, ", ")+" FROM "+params)
	if err != nil {
		return "", 0, err
	}
	colRefs, _ := refRoot["select_list"].([]any)
	holes := make([]node, len(exprs))
	n, bad := 0, false
	for i, e := range exprs {
		en, _ := e.(node)
		holes[i] = replace(clone(en), func(x node) (node, bool) {
			if str(x, "class") != "PARAMETER" {
				return nil, false
			}
			k, err := strconv.Atoi(str(x, "identifier"))
			if err != nil || k < 1 || k > cols {
				bad = true
				return x, true
			}
			n = max(n, k)
			c, _ := colRefs[k-1].(node)
			return clone(c), true
		}).(node)
	}
	if bad || n == 0 {
		return "", 0, nil
	}
	list := make([]string, len(exprs))
	for i := range list {
		list[i] = hole(i)
	}
	sel, err := template(ctx, conn, "SELECT "+strings.Join(list, ", ")+" FROM "+params, holes)
	return sel, n, err
}

// QueryColumns returns the column list of a CREATE TABLE for the result
// of query, as DuckDB types it: "("a" INTEGER, "b" VARCHAR)"; query binds
// as a query of sess would, checked and authorized (Planner.ParseColumns
// reads the list back as an Iceberg schema).
func (p *Planner) QueryColumns(ctx context.Context, sess Session, query *parse.Statement) (string, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, sess, query, true)
	if err != nil {
		return "", err
	}
	if b.duckTypes == nil {
		return "", fmt.Errorf("%w: the query's columns need distinct names", ErrInvalid)
	}
	defs := make([]string, len(b.duckTypes))
	for i, f := range b.schema.Fields() {
		typ := b.duckTypes[i]
		if typ == `"NULL"` || typ == "NULL" {
			return "", fmt.Errorf("%w: column %q of the query is an untyped NULL; CAST it", ErrInvalid, f.Name)
		}
		defs[i] = engine.Quote(f.Name) + " " + typ
	}
	return "(" + strings.Join(defs, ", ") + ")", nil
}

// ---- names ----

// TableName resolves a one-, two- or three-part table name.
func TableName(sess Session, parts []string) (catalog.TableRef, error) {
	ref := catalog.TableRef{Catalog: sess.Catalog, Schema: sess.Schema}
	switch len(parts) {
	case 1:
		ref.Table = parts[0]
	case 2:
		ref.Schema, ref.Table = parts[0], parts[1]
	case 3:
		ref.Catalog, ref.Schema, ref.Table = parts[0], parts[1], parts[2]
	}
	if ref.Catalog == "" {
		return ref, fmt.Errorf("%w: %s names no catalog and the session has none", ErrInvalid, strings.Join(parts, "."))
	}
	if ref.Schema == "" {
		return ref, fmt.Errorf("%w: %s names no schema and the session has none", ErrInvalid, strings.Join(parts, "."))
	}
	if strings.Contains(ref.Schema, ".") {
		return ref, fmt.Errorf("%w: schema name %q has a dot", ErrInvalid, ref.Schema)
	}
	if ref.Table == "" {
		return ref, fmt.Errorf("%w: empty table name", ErrInvalid)
	}
	return ref, nil
}

// Mount returns the mounted catalog name; a catalog that is not mounted
// is ErrNotFound.
func (p *Planner) Mount(name string) (*catalog.Mount, error) {
	mt, err := p.opts.Mounts.Get(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return mt, nil
}

// DuckError classifies an error DuckDB returned for client text and
// keeps its message.
func DuckError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var de *duckdb.Error
	if errors.As(err, &de) {
		// The excerpt DuckDB quotes is icefloe's statement, not the
		// client's.
		msg := engine.WithoutExcerpt(de.Msg)
		switch de.Type {
		case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
			return fmt.Errorf("%w: %s", ErrSyntax, msg)
		case duckdb.ErrorTypePermission:
			return fmt.Errorf("%w: %s", ErrRefused, msg)
		}
		return fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	msg := engine.WithoutExcerpt(err.Error())
	if strings.Contains(msg, "Parser Error") {
		return fmt.Errorf("%w: %s", ErrSyntax, msg)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// QuotedNames is a comma-separated list of quoted column names.
func QuotedNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = engine.Quote(n)
	}
	return strings.Join(q, ", ")
}
