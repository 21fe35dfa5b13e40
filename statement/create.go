package statement

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/planner"
)

// CREATE TABLE name (columns) | AS query, with Iceberg's PARTITIONED BY,
// ORDERED BY and WITH (properties) clauses: DuckDB reads the column list
// (planner.Planner.ParseColumns) or types the query's columns
// (planner.Planner.QueryColumns); the table is made in the mounted
// catalog, and for AS made and filled under a staging name first
// (staged).

// createTable runs a CREATE TABLE statement (with a column list or AS).
func (e *Executor) createTable(ctx context.Context, sess planner.Session, ps *planner.Parser) (int64, error) {
	if n, ok, err := e.ctas(ctx, sess, ps); ok {
		return n, err
	}
	if planner.DryRunOf(ctx) != nil {
		return 0, fmt.Errorf("%w: EXPLAIN of CREATE TABLE without AS (EXPLAIN shows INSERT, UPDATE, DELETE and CREATE TABLE … AS)", planner.ErrUnsupported)
	}
	return 0, e.createWithColumns(ctx, sess, ps)
}

// createWithColumns runs CREATE TABLE [IF NOT EXISTS] name (columns) ….
func (e *Executor) createWithColumns(ctx context.Context, sess planner.Session, ps *planner.Parser) error {
	ps.Pos = 2
	ifNotExists := ps.Accept("IF", "NOT", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return err
	}
	if ps.At("AS") {
		return fmt.Errorf("%w: CREATE TABLE … AS SELECT", planner.ErrUnsupported)
	}
	open, closing, err := ps.Group()
	if err != nil {
		return err
	}
	columns := ps.Text(open, closing)
	c, err := readTableClauses(ps, false)
	if err != nil {
		return err
	}
	ref, err := planner.TableName(sess, parts)
	if err != nil {
		return err
	}
	ref = e.ExistingSchema(ctx, ref)
	mt, err := e.Mount(ref.Catalog)
	if err != nil {
		return err
	}
	schema, err := e.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return err
	}
	opts, exists, err := tableOpts(ctx, mt, ref, schema, c)
	switch {
	case err != nil:
		return err
	case exists && ifNotExists:
		return nil
	case exists:
		return fmt.Errorf("%w: table %s", planner.ErrExists, ref)
	}
	_, err = mt.Catalog.CreateTable(ctx, ref.Ident(), schema, opts...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, icecat.ErrTableAlreadyExists), errors.Is(err, icecat.ErrViewAlreadyExists):
		if ifNotExists && errors.Is(err, icecat.ErrTableAlreadyExists) {
			return nil
		}
		return fmt.Errorf("%w: table %s", planner.ErrExists, ref)
	case errors.Is(err, icecat.ErrNoSuchNamespace):
		return fmt.Errorf("%w: schema %s.%s", planner.ErrNotFound, ref.Catalog, ref.Schema)
	case errors.Is(err, iceberg.ErrInvalidArgument), errors.Is(err, iceberg.ErrInvalidSchema),
		errors.Is(err, iceberg.ErrInvalidFormatVersion), errors.Is(err, iceberg.ErrInvalidPartitionSpec):
		return fmt.Errorf("%w: create table %s: %v", planner.ErrInvalid, ref, err)
	}
	return fmt.Errorf("create table %s: %w", ref, err)
}

// ctas runs CREATE TABLE [IF NOT EXISTS] name [PARTITIONED BY (…)]
// [WITH (…)] AS query. ok is false when the statement is a plain CREATE
// TABLE with a column list, which createWithColumns runs.
func (e *Executor) ctas(ctx context.Context, sess planner.Session, ps *planner.Parser) (n int64, ok bool, err error) {
	ps.Pos = 2
	ifNotExists := ps.Accept("IF", "NOT", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return 0, false, nil
	}
	if ps.AtPunct("(") {
		return 0, false, nil
	}
	c, err := readTableClauses(ps, true)
	if err != nil {
		return 0, true, err
	}
	query := c.query
	if query == "" {
		return 0, true, syntaxf("CREATE TABLE needs a column list or AS query")
	}
	ref, err := planner.TableName(sess, parts)
	if err != nil {
		return 0, true, err
	}
	ref = e.ExistingSchema(ctx, ref)
	if err := e.Authorize(ctx, authz.TableObject(ref), authz.Create); err != nil {
		return 0, true, err
	}
	mt, err := e.Mount(ref.Catalog)
	if err != nil {
		return 0, true, err
	}
	columns, err := e.QueryColumns(ctx, sess, query)
	if err != nil {
		return 0, true, err
	}
	schema, err := e.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return 0, true, err
	}
	opts, exists, err := tableOpts(ctx, mt, ref, schema, c)
	switch {
	case err != nil:
		return 0, true, err
	case exists && ifNotExists:
		return 0, true, nil
	case exists:
		return 0, true, fmt.Errorf("%w: table %s", planner.ErrExists, ref)
	}
	if d := planner.DryRunOf(ctx); d != nil {
		return 0, true, e.explainCTAS(ctx, sess, d, ref, columns, query)
	}
	create := func(staging catalog.TableRef) error {
		if _, err := mt.Internal().CreateTable(ctx, staging.Ident(), schema, opts...); err != nil {
			if errors.Is(err, icecat.ErrNoSuchNamespace) {
				return fmt.Errorf("%w: schema %s.%s", planner.ErrNotFound, ref.Catalog, ref.Schema)
			}
			return fmt.Errorf("%w: create table %s: %v", planner.ErrInvalid, ref, err)
		}
		return nil
	}
	fill := func(tgt *planner.WriteTarget) (int64, error) { return e.insertSelect(ctx, sess, tgt, nil, query) }
	n, err = e.staged(ctx, mt.Internal(), ref, false, create, fill)
	if ifNotExists && errors.Is(err, planner.ErrExists) {
		return 0, true, nil
	}
	return n, true, err
}

// tableClauses are the clauses of CREATE TABLE after its name (and
// column list): PARTITIONED BY, ORDERED BY, WITH and, for CREATE TABLE …
// AS, the query.
type tableClauses struct {
	partItems []planner.PartitionItem
	sortItems []planner.SortItem
	props     iceberg.Properties // WITH, over the commit retries icefloe sets
	query     string
}

// readTableClauses reads the clauses of CREATE TABLE to the end of the
// statement, or with asQuery to the end of AS query (without asQuery, AS
// is unsupported there).
func readTableClauses(ps *planner.Parser, asQuery bool) (tableClauses, error) {
	c := tableClauses{props: iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(planner.DefaultCommitRetries)}}
	var seenPart, seenWith, seenOrder bool
	var err error
	n := len(ps.Tokens())
	for ps.Pos < n && c.query == "" {
		switch {
		case !seenPart && ps.Accept("PARTITIONED", "BY"):
			seenPart = true
			if c.partItems, err = ps.PartitionItems(); err != nil {
				return c, err
			}
		case !seenOrder && ps.Accept("ORDERED", "BY"):
			seenOrder = true
			if c.sortItems, err = ps.SortItems(); err != nil {
				return c, err
			}
		case !seenWith && ps.Accept("WITH"):
			seenWith = true
			if err := ps.Properties(c.props); err != nil {
				return c, err
			}
		case !asQuery && ps.At("AS"):
			return c, fmt.Errorf("%w: CREATE TABLE … AS SELECT", planner.ErrUnsupported)
		case asQuery && ps.At("AS") && ps.Pos+1 < n:
			c.query = ps.Text(ps.Pos+1, n-1)
		default:
			return c, ps.Unexpected()
		}
	}
	return c, nil
}

// tableOpts checks the definition of a new table ref of schema with the
// clauses c and returns the catalog's options that make it; exists says
// ref exists already (nothing else was checked then).
func tableOpts(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, schema *iceberg.Schema, c tableClauses) (opts []icecat.CreateTableOpt, exists bool, err error) {
	spec, err := planner.PartitionSpec(schema, c.partItems)
	if err != nil {
		return nil, false, err
	}
	exists, err = mt.Catalog.CheckTableExists(ctx, ref.Ident())
	if err != nil && !errors.Is(err, icecat.ErrNoSuchNamespace) {
		return nil, false, fmt.Errorf("create table %s: %w", ref, err)
	}
	if exists {
		return nil, true, nil
	}
	order, err := planner.SortOrderOf(schema, c.sortItems)
	if err != nil {
		return nil, false, err
	}
	if err := encryptionProps(ctx, mt, c.props); err != nil {
		return nil, false, err
	}
	if opts, err = placeTable(mt, c.props); err != nil {
		return nil, false, err
	}
	return append(opts, icecat.WithPartitionSpec(&spec), icecat.WithSortOrder(order), icecat.WithProperties(c.props)), false, nil
}

// placeTable checks the properties of a new table that place its files
// against its catalog's allowed locations, and turns "location" into the
// table's location (it is not a table property).
func placeTable(mt *catalog.Mount, props iceberg.Properties) ([]icecat.CreateTableOpt, error) {
	if err := planner.CheckPlacement(mt, props); err != nil {
		return nil, err
	}
	loc, ok := props[catalog.LocationKey]
	if !ok {
		return nil, nil
	}
	delete(props, catalog.LocationKey)
	return []icecat.CreateTableOpt{icecat.WithLocation(loc)}, nil
}

// explainCTAS notes the table a CREATE TABLE … AS would create and the
// plan of its query, and stops the dry run.
func (e *Executor) explainCTAS(ctx context.Context, sess planner.Session, d *planner.DryRun, ref fmt.Stringer, columns, query string) error {
	d.Note("create", "table %s %s", ref, columns)
	plan, err := e.Plan(ctx, sess, query)
	if err != nil {
		return err
	}
	d.NotePlan(plan.Explain)
	d.Note("write", "%d fragments on the workers, each writing Parquet files of %s", len(plan.Endpoints), ref)
	return d.Commit("create the table, then append the written files in one snapshot")
}

// syntaxf is an error wrapping planner.ErrSyntax.
func syntaxf(f string, a ...any) error {
	return fmt.Errorf("%w: "+f, append([]any{planner.ErrSyntax}, a...)...)
}
