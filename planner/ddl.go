package planner

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/conform"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// DefaultCommitRetries is the commit.retry.num-retries that CREATE TABLE
// sets and that INSERT uses on tables that do not set it (see
// commit.DefaultRetries).
const DefaultCommitRetries = commit.DefaultRetries

// CommitStats count the planner's commits to the catalogs.
type CommitStats = commit.Stats

// Commits returns the planner's commit counters.
func (p *Planner) Commits() *CommitStats { return &p.commits }

// ddlAlloc allocates the Arrow data INSERT builds; tests swap in a checked
// allocator.
var ddlAlloc memory.Allocator = memory.DefaultAllocator

// Exec runs one statement that returns no rows and returns its update
// count: the rows an INSERT added, updated or deleted, 0 for DDL. It runs
// CREATE TABLE (with Iceberg's PARTITIONED BY and WITH properties, or AS
// a query), CREATE OR REPLACE TABLE, ALTER TABLE … EXECUTE
// (AlterMaintenance), INSERT, UPDATE, DELETE and MERGE against the
// mounted catalogs; the grammar is in docs/sql.md.
// statement.Executor runs the other statements (CREATE and DROP SCHEMA,
// CREATE and DROP VIEW, DROP TABLE, TRUNCATE, the rest of ALTER TABLE)
// and hands these here. Anything else returns an error wrapping ErrUnsupported.
// Unqualified names take sess.Catalog and sess.Schema. args bind the
// parameters of an INSERT, UPDATE or DELETE (see params.go).
func (p *Planner) Exec(ctx context.Context, sess Session, query string, args ...any) (int64, error) {
	var b paramBatch
	if len(args) > 0 {
		b.rows = [][]any{args}
	}
	return p.execBatch(ctx, sess, query, &b)
}

// ExecBatch runs an update for every row of the parameter batches (one
// column per placeholder; no batch runs it once without values) and
// returns the total count. An INSERT … VALUES writes the rows of every
// parameter row in one commit, or none of them; other statements run once
// per row, in order, each with its own commit, and stop at the first
// error. An error names its parameter row when there are several. The
// caller keeps its batches.
func (p *Planner) ExecBatch(ctx context.Context, sess Session, query string, params []arrow.RecordBatch) (int64, error) {
	return p.execBatch(ctx, sess, query, &paramBatch{recs: params})
}

func (p *Planner) execBatch(ctx context.Context, sess Session, query string, b *paramBatch) (int64, error) {
	ctx = commit.WithStatement(ctx)
	ps, err := ParseUpdate(query)
	if err != nil {
		return 0, err
	}
	dml := ps.At("INSERT") || ps.At("UPDATE") || ps.At("DELETE")
	if b.len() > 0 && !dml {
		return 0, fmt.Errorf("%w: parameters outside INSERT, UPDATE and DELETE", ErrUnsupported)
	}
	if ps.At("INSERT") {
		return p.ddlInsert(ctx, sess, ps, b)
	}
	rows, err := b.values()
	if err != nil {
		return 0, err
	}
	if len(rows) <= 1 {
		var args []any
		if len(rows) == 1 {
			args = rows[0]
		}
		return p.exec(ctx, sess, ps, args)
	}
	var total int64
	for i, row := range rows {
		n, err := p.exec(ctx, sess, &Parser{src: ps.src, toks: ps.toks}, row)
		if err != nil {
			return total, rowError(i, len(rows), err)
		}
		total += n
	}
	return total, nil
}

// ParseUpdate tokenizes one update statement (what Exec runs) and
// returns a parser at its first token; errors wrap ErrSyntax.
func ParseUpdate(query string) (*Parser, error) {
	toks, err := ddlTokens(query)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%w: empty statement", ErrSyntax)
	}
	for _, t := range toks {
		if t.IsOp(";") {
			return nil, fmt.Errorf("%w: one statement at a time", ErrSyntax)
		}
	}
	return &Parser{src: query, toks: toks}, nil
}

// exec runs one statement other than INSERT with one set of parameter
// values.
func (p *Planner) exec(ctx context.Context, sess Session, ps *Parser, args []any) (int64, error) {
	switch {
	case ps.At("CREATE", "TABLE"):
		return p.createTable(ctx, sess, ps)
	case ps.At("CREATE", "OR", "REPLACE", "TABLE"):
		return p.createOrReplace(ctx, sess, ps)
	case ps.At("DELETE"):
		return p.dmlDelete(ctx, sess, ps, args)
	case ps.At("UPDATE"):
		return p.dmlUpdate(ctx, sess, ps, args)
	case ps.At("MERGE"):
		return p.dmlMerge(ctx, sess, ps, args)
	case ps.At("ALTER"):
		if n, ok, err := p.AlterMaintenance(ctx, sess, ps); ok {
			return n, err
		}
	}
	return 0, fmt.Errorf("%w: %s statements", ErrUnsupported, ps.Kind())
}

// ---- statements ----

func (p *Planner) ddlCreateTable(ctx context.Context, sess Session, ps *Parser) error {
	ps.Pos = 2
	ifNotExists := ps.Accept("IF", "NOT", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return err
	}
	if ps.At("AS") {
		return fmt.Errorf("%w: CREATE TABLE … AS SELECT", ErrUnsupported)
	}
	open, closing, err := ps.group()
	if err != nil {
		return err
	}
	columns := ps.Text(open, closing)
	var (
		partItems []PartitionItem
		props     = iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(DefaultCommitRetries)}
		seenPart  bool
		seenWith  bool
		sortItems []ddlSortItem
		seenOrder bool
	)
	for ps.Pos < len(ps.toks) {
		switch {
		case !seenPart && ps.Accept("PARTITIONED", "BY"):
			seenPart = true
			if partItems, err = ps.partitionItems(); err != nil {
				return err
			}
		case !seenOrder && ps.Accept("ORDERED", "BY"):
			seenOrder = true
			if sortItems, err = ps.sortItems(); err != nil {
				return err
			}
		case !seenWith && ps.Accept("WITH"):
			seenWith = true
			if err := ps.Properties(props); err != nil {
				return err
			}
		case ps.At("AS"):
			return fmt.Errorf("%w: CREATE TABLE … AS SELECT", ErrUnsupported)
		default:
			return ps.Unexpected()
		}
	}
	ref, err := TableName(sess, parts)
	if err != nil {
		return err
	}
	ref = p.ExistingSchema(ctx, ref)
	mt, err := p.Mount(ref.Catalog)
	if err != nil {
		return err
	}
	schema, err := p.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return err
	}
	spec, err := ddlPartitionSpec(schema, partItems)
	if err != nil {
		return err
	}
	cat := mt.Catalog
	exists, err := cat.CheckTableExists(ctx, ref.Ident())
	if err != nil && !errors.Is(err, icecat.ErrNoSuchNamespace) {
		return fmt.Errorf("create table %s: %w", ref, err)
	}
	if exists {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("%w: table %s", ErrExists, ref)
	}
	order, err := ddlSortOrder(schema, sortItems)
	if err != nil {
		return err
	}
	if err := encryptionProps(ctx, mt, props); err != nil {
		return err
	}
	opts, err := placeTable(mt, props)
	if err != nil {
		return err
	}
	_, err = cat.CreateTable(ctx, ref.Ident(), schema,
		append(opts, icecat.WithPartitionSpec(&spec), icecat.WithSortOrder(order), icecat.WithProperties(props))...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, icecat.ErrTableAlreadyExists), errors.Is(err, icecat.ErrViewAlreadyExists):
		if ifNotExists && errors.Is(err, icecat.ErrTableAlreadyExists) {
			return nil
		}
		return fmt.Errorf("%w: table %s", ErrExists, ref)
	case errors.Is(err, icecat.ErrNoSuchNamespace):
		return fmt.Errorf("%w: schema %s.%s", ErrNotFound, ref.Catalog, ref.Schema)
	case errors.Is(err, iceberg.ErrInvalidArgument), errors.Is(err, iceberg.ErrInvalidSchema),
		errors.Is(err, iceberg.ErrInvalidFormatVersion), errors.Is(err, iceberg.ErrInvalidPartitionSpec):
		return fmt.Errorf("%w: create table %s: %v", ErrInvalid, ref, err)
	}
	return fmt.Errorf("create table %s: %w", ref, err)
}

// placeTable checks the properties of a new table that place its files
// against its catalog's allowed locations, and turns "location" into the
// table's location (it is not a table property).
func placeTable(mt *catalog.Mount, props iceberg.Properties) ([]icecat.CreateTableOpt, error) {
	if err := CheckPlacement(mt, props); err != nil {
		return nil, err
	}
	loc, ok := props[catalog.LocationKey]
	if !ok {
		return nil, nil
	}
	delete(props, catalog.LocationKey)
	return []icecat.CreateTableOpt{icecat.WithLocation(loc)}, nil
}

// checkPlacement refuses properties that would place files outside the
// catalog's warehouse and allowed locations (catalog.PlacesFiles).
func CheckPlacement(mt *catalog.Mount, props iceberg.Properties) error {
	for _, k := range catalog.SortedKeys(props) {
		if !catalog.PlacesFiles(k) && !strings.EqualFold(k, catalog.LocationProviderImplKey) {
			continue
		}
		if err := mt.Locations.Check(k, props[k]); err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	return nil
}

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
		return nil, ddlDuckError(ctx, err)
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

// PartitionItem is one entry of PARTITIONED BY (or of ALTER TABLE … ADD
// or DROP PARTITION FIELD): a column with a transform (empty for
// identity) and its numeric argument (bucket count, width). Parser reads
// it; Transform checks it.
type PartitionItem struct {
	transform string
	column    string
	arg       int
	hasArg    bool
}

// Column is the (possibly dotted) name of the item's source column.
func (it PartitionItem) Column() string { return it.column }

// Transform maps the item's transform name to iceberg-go's transform and
// the suffix of the partition field name (Iceberg Java's naming); errors
// wrap ErrInvalid.
func (it PartitionItem) Transform() (iceberg.Transform, string, error) {
	name := strings.ToLower(it.transform)
	needArg := name == "bucket" || name == "truncate"
	if needArg != it.hasArg {
		if needArg {
			return nil, "", fmt.Errorf("%w: partition transform %s needs a number and a column, e.g. %s(16, %s)", ErrInvalid, it.transform, name, it.column)
		}
		return nil, "", fmt.Errorf("%w: partition transform %s takes only a column", ErrInvalid, it.transform)
	}
	if needArg && it.arg <= 0 {
		return nil, "", fmt.Errorf("%w: partition transform %s needs a positive number, got %d", ErrInvalid, it.transform, it.arg)
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
		return iceberg.BucketTransform{NumBuckets: it.arg}, "_bucket", nil
	case "truncate":
		return iceberg.TruncateTransform{Width: it.arg}, "_trunc", nil
	case "void":
		return iceberg.VoidTransform{}, "_null", nil
	}
	return nil, "", fmt.Errorf("%w: unknown partition transform %q", ErrInvalid, it.transform)
}

// ddlPartitionSpec builds the spec of PARTITIONED BY against schema.
func ddlPartitionSpec(schema *iceberg.Schema, items []PartitionItem) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, it := range items {
		tr, suffix, err := it.Transform()
		if err != nil {
			return iceberg.PartitionSpec{}, err
		}
		field, ok := schema.FindFieldByName(it.column)
		if !ok {
			field, ok = schema.FindFieldByNameCaseInsensitive(it.column)
		}
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition column %q is not a column of the table", ErrInvalid, it.column)
		}
		if !tr.CanTransform(field.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: partition transform %s does not apply to column %q of type %s", ErrInvalid, tr, it.column, field.Type)
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

// ddlInsert runs an INSERT, once per parameter row (none: once without
// values). INSERT … VALUES writes all rows in one commit; INSERT … SELECT
// commits once per row.
func (p *Planner) ddlInsert(ctx context.Context, sess Session, ps *Parser, b *paramBatch) (int64, error) {
	ps.Pos = 1
	if ps.At("OR") {
		return 0, fmt.Errorf("%w: INSERT OR …", ErrUnsupported)
	}
	if !ps.Accept("INTO") {
		return 0, ps.Unexpected()
	}
	parts, err := ps.Name(3)
	if err != nil {
		return 0, err
	}
	columns := ""
	var colNames []string
	if ps.AtPunct("(") {
		open, closing, err := ps.group()
		if err != nil {
			return 0, err
		}
		inner := &Parser{src: ps.src, toks: ps.toks[open+1 : closing]}
		if inner.atQuery() {
			return p.insertQueryRows(ctx, sess, parts, nil, ps.Text(open, len(ps.toks)-1), b)
		}
		if colNames, err = inner.columnNames(); err != nil {
			return 0, err
		}
		columns = "(" + quotedNames(colNames) + ")"
	}
	switch {
	case ps.atQuery():
		return p.insertQueryRows(ctx, sess, parts, colNames, ps.Text(ps.Pos, len(ps.toks)-1), b)
	case ps.At("DEFAULT", "VALUES"):
		return 0, fmt.Errorf("%w: INSERT … DEFAULT VALUES", ErrUnsupported)
	case ps.At("BY"):
		return 0, fmt.Errorf("%w: INSERT … BY NAME / BY POSITION", ErrUnsupported)
	case !ps.At("VALUES"):
		return 0, ps.Unexpected()
	}
	for i, depth := ps.Pos, 0; i < len(ps.toks); i++ {
		t := ps.toks[i]
		switch {
		case t.IsOp("("):
			depth++
		case t.IsOp(")"):
			depth--
		case depth == 0 && t.Is("RETURNING"):
			return 0, fmt.Errorf("%w: INSERT … RETURNING", ErrUnsupported)
		case depth == 0 && t.Is("ON") && i+1 < len(ps.toks) && ps.toks[i+1].Is("CONFLICT"):
			return 0, fmt.Errorf("%w: INSERT … ON CONFLICT", ErrUnsupported)
		}
	}
	return p.insertValues(ctx, sess, parts, columns, ps.Text(ps.Pos, len(ps.toks)-1), b)
}

// insertQueryRows runs INSERT … SELECT once per parameter row.
func (p *Planner) insertQueryRows(ctx context.Context, sess Session, parts, cols []string, query string, b *paramBatch) (int64, error) {
	rows, err := b.values()
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return p.insertQuery(ctx, sess, parts, cols, query)
	}
	var total int64
	for i, row := range rows {
		n, err := p.insertQuery(ctx, sess, parts, cols, query, row...)
		if err != nil {
			return total, rowError(i, len(rows), err)
		}
		total += n
	}
	return total, nil
}

// rowError names the parameter row an error came from, when there are
// several.
func rowError(i, n int, err error) error {
	if n > 1 {
		return fmt.Errorf("parameter row %d: %w", i+1, err)
	}
	return err
}

// insertValues runs INSERT INTO parts columns values into a stand-in of
// the table in the coordinator's DuckDB, for every parameter row, and then
// writes and commits the stand-in's rows once. DuckDB casts the values to
// the columns' types and enforces NOT NULL; an error names the parameter
// row.
func (p *Planner) insertValues(ctx context.Context, sess Session, parts []string, columns, values string, b *paramBatch) (int64, error) {
	// loadTarget resolves t.branch_b and the session's WAP branch, so the
	// rows commit to the branch the statement names; a caller without
	// INSERT is denied before any parameter row is read.
	tgt, err := p.LoadTarget(ctx, sess, parts, authz.Insert)
	if err != nil {
		return 0, err
	}
	ref := tgt.Ref
	tbl := tgt.Pinned.Table
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return 0, fmt.Errorf("arrow schema of %s: %w", ref, err)
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	standIn, err := createStandIn(ctx, conn, ref, tbl.Schema(), true)
	if err != nil {
		return 0, err
	}
	// DuckDB checks that the client's text is one VALUES list, and then
	// that the INSERT it ends is one INSERT statement.
	if err := checkValues(ctx, conn, values, p.opts.MaxValueBytes); err != nil {
		return 0, err
	}
	if err := fillStandIn(ctx, conn, "INSERT INTO "+standIn+" "+columns, values, b); err != nil {
		return 0, err
	}
	read := "SELECT * FROM " + standIn
	if order := partitionOrder(tbl); order != "" && b.len() > 1 {
		read += " ORDER BY " + order
	}
	recs, n, err := readStandIn(ctx, conn, ref, read, target)
	defer releaseBatches(recs)
	if err != nil || n == 0 {
		return 0, err
	}
	// Written here, committed as INSERT … SELECT commits: one snapshot,
	// retried against the refreshed table on conflict.
	return p.commitValues(ctx, tgt, target, recs, n)
}

// createStandIn creates a temp table with the table's columns and types,
// and with notNull their NOT NULL constraints. It carries the table's own
// name so DuckDB's messages (e.g. "NOT NULL constraint failed: orders.id")
// name it; the quoted name is returned.
func createStandIn(ctx context.Context, conn *engine.Conn, ref catalog.TableRef, schema *iceberg.Schema, notNull bool) (string, error) {
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

// fillStandIn runs into (INSERT INTO stand-in [(columns)]) with values,
// the checked VALUES clause, once without parameters, or for every
// parameter row: in one statement over a table of the client's parameter
// batches when the clause is one row (valuesSelect), and otherwise, or
// when that fails, once per row through one prepared statement, which
// finds the row an error is in.
func fillStandIn(ctx context.Context, conn *engine.Conn, into, values string, b *paramBatch) error {
	insert := into + " " + values
	if b.len() == 0 {
		if err := conn.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, insert); err != nil {
			return ddlDuckError(ctx, err)
		}
		return nil
	}
	if len(b.recs) > 0 && b.len() > 1 {
		if ok, err := insertAll(ctx, conn, into, values, b.recs); ok || err != nil {
			return err
		}
	}
	rows, err := b.values()
	if err != nil {
		return err
	}
	return conn.Prepared(ctx, duckdb.STATEMENT_TYPE_INSERT, insert, func(st *duckdb.Stmt) error {
		for i, row := range rows {
			dargs, err := driverArgs(row)
			if err != nil {
				return rowError(i, len(rows), err)
			}
			named := make([]driver.NamedValue, len(dargs))
			for j, a := range dargs {
				named[j] = driver.NamedValue{Ordinal: j + 1, Value: a}
			}
			if _, err := st.ExecContext(ctx, named); err != nil {
				return rowError(i, len(rows), ddlDuckError(ctx, err))
			}
		}
		return nil
	})
}

// readStandIn reads the stand-in's rows as batches of the table's Arrow
// schema; the caller releases them (also on error).
func readStandIn(ctx context.Context, conn *engine.Conn, ref catalog.TableRef, query string, target *arrow.Schema) ([]arrow.RecordBatch, int64, error) {
	rdr, err := conn.Query(ctx, query, engine.QueryOptions{BatchRows: 64 << 10, Allocator: ddlAlloc})
	if err != nil {
		return nil, 0, fmt.Errorf("insert into %s: read stand-in: %w", ref, err)
	}
	defer rdr.Release()
	var (
		recs []arrow.RecordBatch
		rows int64
	)
	for rdr.Next() {
		rec, err := ddlConformRecord(rdr.RecordBatch(), target, rows)
		if err != nil {
			return recs, 0, fmt.Errorf("insert into %s: %w", ref, err)
		}
		recs = append(recs, rec)
		rows += rec.NumRows()
	}
	if err := rdr.Err(); err != nil {
		return recs, 0, fmt.Errorf("insert into %s: read stand-in: %w", ref, err)
	}
	return recs, rows, nil
}

// paramsTable is the temp table insertAll loads the parameter rows into;
// its columns are named $1, $2, ….
const paramsTable = "__icefloe_params"

// insertAll inserts every parameter row with one INSERT … SELECT over a
// table of the batches: the VALUES row's expressions as DuckDB parsed
// them, each placeholder $n read from the column $n (valuesSelect). ok is
// false (and nothing was inserted) when the clause is not one row with
// placeholders, the batches hold a type DuckDB would not read as the
// row-by-row binding does, or the statement fails; the caller then inserts
// row by row.
func insertAll(ctx context.Context, conn *engine.Conn, into, values string, recs []arrow.RecordBatch) (ok bool, err error) {
	schema := recs[0].Schema()
	fields := make([]arrow.Field, schema.NumFields())
	for i, f := range schema.Fields() {
		if !bulkParamTypes[f.Type.ID()] {
			return false, nil
		}
		fields[i] = arrow.Field{Name: fmt.Sprintf("$%d", i+1), Type: f.Type, Nullable: true}
	}
	sel, n, err := valuesSelect(ctx, conn, values, len(fields))
	if err != nil || sel == "" {
		return false, err
	}
	if n != len(fields) {
		return false, fmt.Errorf("%w: the statement has %d parameters, %d values were bound", ErrInvalid, n, len(fields))
	}
	named := arrow.NewSchema(fields, nil)
	batches := make([]arrow.RecordBatch, 0, len(recs))
	defer func() { releaseBatches(batches) }()
	for _, r := range recs {
		if !r.Schema().Equal(schema) {
			return false, nil
		}
		batches = append(batches, array.NewRecordBatch(named, r.Columns(), r.NumRows()))
	}
	rdr, err := array.NewRecordReader(named, batches)
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	if err := conn.LoadTable(ctx, paramsTable, rdr); err != nil {
		return false, nil
	}
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS "+paramsTable)
	err = conn.ExecChecked(ctx, duckdb.STATEMENT_TYPE_INSERT, into+" "+sel)
	if err != nil && ctx.Err() != nil {
		return false, ctx.Err()
	}
	return err == nil, nil
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// bulkParamTypes are the parameter types insertAll loads into DuckDB:
// those DuckDB reads from Arrow as the values the row-by-row binding
// (toParam) gives it.
var bulkParamTypes = map[arrow.Type]bool{
	arrow.NULL: true, arrow.BOOL: true,
	arrow.INT8: true, arrow.INT16: true, arrow.INT32: true, arrow.INT64: true,
	arrow.UINT8: true, arrow.UINT16: true, arrow.UINT32: true, arrow.UINT64: true,
	arrow.FLOAT32: true, arrow.FLOAT64: true, arrow.DECIMAL128: true,
	arrow.STRING: true, arrow.LARGE_STRING: true, arrow.BINARY: true, arrow.LARGE_BINARY: true,
	arrow.DATE32: true, arrow.TIME32: true, arrow.TIME64: true, arrow.TIMESTAMP: true,
}

// valuesSelect returns, for a VALUES clause of exactly one row, the SELECT
// of that row's expressions over paramsTable with each placeholder $k
// read from its column $k, printed through DuckDB's AST (template), and
// the highest placeholder; "" when the clause has other rows or no
// placeholder. cols is the number of parameter columns.
func valuesSelect(ctx context.Context, conn *engine.Conn, values string, cols int) (string, int, error) {
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
	refRoot, err := parseNode(ctx, conn, "SELECT "+strings.Join(refs, ", ")+" FROM "+paramsTable)
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
	sel, err := template(ctx, conn, "SELECT "+strings.Join(list, ", ")+" FROM "+paramsTable, holes)
	return sel, n, err
}

// ddlConformRecord turns a batch read from the stand-in into a batch of
// the table's Arrow schema (internal/conform); a NULL in a NOT NULL column
// or a value that does not fit is the client's mistake. The caller releases the result.
func ddlConformRecord(rec arrow.RecordBatch, target *arrow.Schema, firstRow int64) (arrow.RecordBatch, error) {
	out, err := conform.Record(ddlAlloc, rec, target, firstRow)
	if errors.Is(err, conform.ErrNotNull) || errors.Is(err, conform.ErrValue) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, err
}

// ---- names ----

// ddlTableName resolves a one-, two- or three-part table name.
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

func (p *Planner) Mount(name string) (*catalog.Mount, error) {
	mt, err := p.opts.Mounts.Get(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return mt, nil
}

// ddlDuckError classifies an error DuckDB returned for client text and
// keeps its message.
func ddlDuckError(ctx context.Context, err error) error {
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

// ---- tokens ----
//
// Statements are cut into tokens by internal/sqltok, which agrees with
// DuckDB's lexer, so that the Iceberg-only clauses can be cut out and names
// read; DuckDB parses everything else.

// ddlTokens tokenizes a statement and drops trailing ';'.
func ddlTokens(query string) ([]sqltok.Token, error) {
	toks, err := sqltok.Tokenize(query)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return sqltok.Trim(toks), nil
}

// describe names a token in an error.
func describe(t sqltok.Token) string { return strconv.Quote(t.Value) }

func ddlSyntaxf(f string, a ...any) error {
	return fmt.Errorf("%w: "+f, append([]any{ErrSyntax}, a...)...)
}

// ---- parser helpers ----

// Parser reads the statements DuckDB does not parse for icefloe (DDL,
// DML heads, CALL, SHOW, USE) from their tokens (internal/sqltok), for
// planner and for the statement package.
type Parser struct {
	src  string
	toks []sqltok.Token
	// Pos is the index of the next token; a statement's runner sets it
	// past the keywords its dispatch matched.
	Pos int
}

// At reports whether the next tokens are the keywords kws.
func (p *Parser) At(kws ...string) bool {
	if p.Pos+len(kws) > len(p.toks) {
		return false
	}
	for j, kw := range kws {
		if !p.toks[p.Pos+j].Is(kw) {
			return false
		}
	}
	return true
}

// Accept consumes the keywords kws if they come next.
func (p *Parser) Accept(kws ...string) bool {
	if !p.At(kws...) {
		return false
	}
	p.Pos += len(kws)
	return true
}

// AtPunct reports whether the next token is the operator or punctuation s.
func (p *Parser) AtPunct(s string) bool { return p.Pos < len(p.toks) && p.toks[p.Pos].IsOp(s) }

// AcceptPunct consumes the operator or punctuation s if it comes next.
func (p *Parser) AcceptPunct(s string) bool {
	if !p.AtPunct(s) {
		return false
	}
	p.Pos++
	return true
}

// atQuery reports whether a query starts here.
func (p *Parser) atQuery() bool {
	return p.At("SELECT") || p.At("WITH") || p.At("FROM") || p.At("TABLE") || p.AtPunct("(")
}

// Kind names the statement (its first keyword, two for CREATE and DROP)
// for an unsupported-statement error.
func (p *Parser) Kind() string {
	var words []string
	for _, t := range p.toks {
		if t.Kind != sqltok.Word || len(words) == 2 {
			break
		}
		words = append(words, strings.ToUpper(t.Value))
	}
	if len(words) == 0 {
		return "this"
	}
	if len(words) == 2 && words[0] != "CREATE" && words[0] != "DROP" {
		words = words[:1]
	}
	return strings.Join(words, " ")
}

// Unexpected is the ErrSyntax error for the next token, or for the end
// of the statement when every token is read.
func (p *Parser) Unexpected() error {
	if p.Pos >= len(p.toks) {
		return ddlSyntaxf("unexpected end of statement")
	}
	return ddlSyntaxf("unexpected %s at offset %d", describe(p.toks[p.Pos]), p.toks[p.Pos].Pos)
}

// End reports an error wrapping ErrSyntax unless every token is read.
func (p *Parser) End() error {
	if p.Pos < len(p.toks) {
		return p.Unexpected()
	}
	return nil
}

// Ident reads a bare or quoted identifier.
func (p *Parser) Ident() (string, error) {
	if p.Pos >= len(p.toks) || !p.toks[p.Pos].IsIdent() {
		return "", p.Unexpected()
	}
	p.Pos++
	return p.toks[p.Pos-1].Value, nil
}

// Name reads a dotted name of at most max parts.
func (p *Parser) Name(max int) ([]string, error) {
	var parts []string
	for {
		part, err := p.Ident()
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
		if !p.AtPunct(".") {
			break
		}
		if len(parts) == max {
			return nil, ddlSyntaxf("name %s… has more than %d parts", strings.Join(parts, "."), max)
		}
		p.Pos++
	}
	return parts, nil
}

// group finds the parenthesised group starting at the next token and
// returns the indexes of its "(" and ")"; it moves past the ")".
func (p *Parser) group() (open, closing int, err error) {
	if !p.AtPunct("(") {
		return 0, 0, p.Unexpected()
	}
	depth := 0
	for j := p.Pos; j < len(p.toks); j++ {
		switch {
		case p.toks[j].IsOp("("):
			depth++
		case p.toks[j].IsOp(")"):
			depth--
			if depth == 0 {
				open, p.Pos = p.Pos, j+1
				return open, j, nil
			}
		}
	}
	return 0, 0, ddlSyntaxf("unbalanced parentheses")
}

// quotedNames is a comma-separated list of quoted column names.
func quotedNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = engine.Quote(n)
	}
	return strings.Join(q, ", ")
}

// Text returns the statement text from token from through token to
// (indexes into Tokens).
func (p *Parser) Text(from, to int) string { return p.src[p.toks[from].Pos:p.toks[to].End] }

// Tokens returns the statement's tokens; Pos indexes them. The caller
// must not modify them.
func (p *Parser) Tokens() []sqltok.Token { return p.toks }

// partitionItems reads "( item, … )" of PARTITIONED BY.
func (p *Parser) partitionItems() ([]PartitionItem, error) {
	if !p.AcceptPunct("(") {
		return nil, p.Unexpected()
	}
	var items []PartitionItem
	for {
		var it PartitionItem
		if p.Pos+1 < len(p.toks) && p.toks[p.Pos].Kind == sqltok.Word && p.toks[p.Pos+1].IsOp("(") {
			it.transform = p.toks[p.Pos].Value
			p.Pos += 2
			for n := 0; ; n++ {
				if n > 1 {
					return nil, ddlSyntaxf("partition transform %s takes at most two arguments", it.transform)
				}
				if p.Pos < len(p.toks) && p.toks[p.Pos].Kind == sqltok.Number {
					if it.hasArg {
						return nil, p.Unexpected()
					}
					v, err := strconv.Atoi(p.toks[p.Pos].Value)
					if err != nil {
						return nil, ddlSyntaxf("partition transform %s: bad number %s", it.transform, p.toks[p.Pos].Value)
					}
					it.arg, it.hasArg = v, true
					p.Pos++
				} else {
					if it.column != "" {
						return nil, p.Unexpected()
					}
					col, err := p.Name(16)
					if err != nil {
						return nil, err
					}
					it.column = strings.Join(col, ".")
				}
				if !p.AcceptPunct(",") {
					break
				}
			}
			if !p.AcceptPunct(")") {
				return nil, p.Unexpected()
			}
			if it.column == "" {
				return nil, ddlSyntaxf("partition transform %s names no column", it.transform)
			}
		} else {
			col, err := p.Name(16)
			if err != nil {
				return nil, err
			}
			it.column = strings.Join(col, ".")
		}
		items = append(items, it)
		if p.AcceptPunct(")") {
			return items, nil
		}
		if !p.AcceptPunct(",") {
			return nil, p.Unexpected()
		}
	}
}

// PartitionItem reads one PARTITIONED BY item, without parentheses
// around it, to the end of the statement (ALTER TABLE … ADD or DROP
// PARTITION FIELD item).
func (p *Parser) PartitionItem() (PartitionItem, error) {
	toks := append([]sqltok.Token{{Kind: sqltok.Op, Value: "("}}, p.toks[p.Pos:]...)
	toks = append(toks, sqltok.Token{Kind: sqltok.Op, Value: ")"})
	sub := &Parser{src: p.src, toks: toks}
	items, err := sub.partitionItems()
	if err != nil {
		return PartitionItem{}, err
	}
	if len(items) != 1 || sub.Pos != len(sub.toks) {
		return PartitionItem{}, ddlSyntaxf("one partition field at a time")
	}
	p.Pos = len(p.toks)
	return items[0], nil
}

// properties reads "( key = value, … )" of WITH into props. Keys are
// strings or dotted names; values strings, numbers or true/false.
func (p *Parser) Properties(props iceberg.Properties) error {
	if !p.AcceptPunct("(") {
		return p.Unexpected()
	}
	for {
		var key string
		if p.Pos < len(p.toks) && p.toks[p.Pos].Kind == sqltok.String {
			key = p.toks[p.Pos].Value
			p.Pos++
		} else {
			// A bare key is words joined by "." or "-": format-version.
			var b strings.Builder
			for {
				w, err := p.Ident()
				if err != nil {
					return err
				}
				b.WriteString(w)
				if !p.AtPunct(".") && !p.AtPunct("-") {
					break
				}
				b.WriteString(p.toks[p.Pos].Value)
				p.Pos++
			}
			key = b.String()
		}
		if !p.AcceptPunct("=") {
			return p.Unexpected()
		}
		if p.Pos >= len(p.toks) {
			return p.Unexpected()
		}
		t := p.toks[p.Pos]
		switch {
		case t.Kind == sqltok.String, t.Kind == sqltok.Number:
			props[key] = t.Value
		case t.Is("true"), t.Is("false"):
			props[key] = strings.ToLower(t.Value)
		default:
			return p.Unexpected()
		}
		p.Pos++
		if p.AcceptPunct(")") {
			return nil
		}
		if !p.AcceptPunct(",") {
			return p.Unexpected()
		}
	}
}
