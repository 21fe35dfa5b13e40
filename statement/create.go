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
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// CREATE TABLE name (columns) | AS query, with Iceberg's PARTITIONED BY,
// ORDERED BY and WITH (properties) clauses: DuckDB reads the column list
// (planner.Planner.ParseColumns) or types the query's columns
// (planner.Planner.QueryColumns); the table is made in the mounted
// catalog, and for AS made and filled under a staging name first
// (staged).

func init() {
	runs(parse.KindCreateTable, (*Executor).createTable)
	runs(parse.KindReplaceTable, (*Executor).createOrReplace)
}

// createTable runs a CREATE TABLE statement (with a column list or AS).
func (e *Executor) createTable(ctx context.Context, sess planner.Session, t *parse.CreateTable) (int64, error) {
	if t.As != nil {
		return e.ctas(ctx, sess, t)
	}
	if planner.DryRunOf(ctx) != nil {
		return 0, fmt.Errorf("%w: EXPLAIN of CREATE TABLE without AS (EXPLAIN shows INSERT, UPDATE, DELETE and CREATE TABLE … AS)", planner.ErrUnsupported)
	}
	return 0, e.createWithColumns(ctx, sess, t)
}

// createWithColumns runs CREATE TABLE [IF NOT EXISTS] name (columns) ….
func (e *Executor) createWithColumns(ctx context.Context, sess planner.Session, t *parse.CreateTable) error {
	ifNotExists := t.IfNotExists
	ref, err := planner.TableName(sess, t.Name)
	if err != nil {
		return err
	}
	ref = e.ExistingSchema(ctx, ref)
	mt, err := e.Mount(ref.Catalog)
	if err != nil {
		return err
	}
	schema, err := e.ParseColumns(ctx, ref.Table, t.Columns)
	if err != nil {
		return err
	}
	opts, exists, err := tableOpts(ctx, mt, ref, schema, t)
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
// [WITH (…)] AS query.
func (e *Executor) ctas(ctx context.Context, sess planner.Session, t *parse.CreateTable) (n int64, err error) {
	ifNotExists, query := t.IfNotExists, t.As
	ref, err := planner.TableName(sess, t.Name)
	if err != nil {
		return 0, err
	}
	ref = e.ExistingSchema(ctx, ref)
	if err := e.Authorize(ctx, authz.TableObject(ref), authz.Create); err != nil {
		return 0, err
	}
	mt, err := e.Mount(ref.Catalog)
	if err != nil {
		return 0, err
	}
	columns, err := e.QueryColumns(ctx, sess, query)
	if err != nil {
		return 0, err
	}
	schema, err := e.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return 0, err
	}
	opts, exists, err := tableOpts(ctx, mt, ref, schema, t)
	switch {
	case err != nil:
		return 0, err
	case exists && ifNotExists:
		return 0, nil
	case exists:
		return 0, fmt.Errorf("%w: table %s", planner.ErrExists, ref)
	}
	if d := planner.DryRunOf(ctx); d != nil {
		return 0, e.explainCTAS(ctx, sess, d, ref, columns, query)
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
		return 0, nil
	}
	return n, err
}

// tableProps are the properties of a new table: WITH's, over the commit
// retries icefloe sets.
func tableProps(t *parse.CreateTable) iceberg.Properties {
	props := iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(planner.DefaultCommitRetries)}
	for k, v := range t.With {
		props[k] = v
	}
	return props
}

// tableOpts checks the definition of a new table ref of schema with the
// clauses c and returns the catalog's options that make it; exists says
// ref exists already (nothing else was checked then).
func tableOpts(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, schema *iceberg.Schema, t *parse.CreateTable) (opts []icecat.CreateTableOpt, exists bool, err error) {
	spec, err := planner.PartitionSpec(schema, t.Partition)
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
	order, err := planner.SortOrderOf(schema, t.Order)
	if err != nil {
		return nil, false, err
	}
	props := tableProps(t)
	if err := encryptionProps(ctx, mt, props); err != nil {
		return nil, false, err
	}
	if opts, err = placeTable(mt, props); err != nil {
		return nil, false, err
	}
	return append(opts, icecat.WithPartitionSpec(&spec), icecat.WithSortOrder(order), icecat.WithProperties(props)), false, nil
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
func (e *Executor) explainCTAS(ctx context.Context, sess planner.Session, d *planner.DryRun, ref fmt.Stringer, columns string, query *parse.Statement) error {
	d.Note("create", "table %s %s", ref, columns)
	plan, err := e.Plan(ctx, sess, query)
	if err != nil {
		return err
	}
	d.NotePlan(plan.Explain)
	d.Note("write", "%d fragments on the workers, each writing Parquet files of %s", len(plan.Endpoints), ref)
	return d.Commit("create the table, then append the written files in one snapshot")
}
