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
	iceplan "github.com/icefloe/icefloe/planner/plan"
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
	d, err := e.readTableDef(ctx, sess, t)
	if err != nil {
		return 0, err
	}
	if d.c.query == nil && planner.DryRunOf(ctx) != nil {
		return 0, fmt.Errorf("%w: EXPLAIN of CREATE TABLE without AS (EXPLAIN shows INSERT, UPDATE, DELETE and CREATE TABLE … AS)", planner.ErrUnsupported)
	}
	exists, err := d.mt.Catalog.CheckTableExists(ctx, d.ref.Ident())
	switch {
	case err != nil && !errors.Is(err, icecat.ErrNoSuchNamespace):
		return 0, fmt.Errorf("create table %s: %w", d.ref, err)
	case exists && d.ifNotExists:
		return 0, nil
	case exists:
		return 0, fmt.Errorf("%w: table %s", planner.ErrExists, d.ref)
	}
	opts, err := e.tableOpts(ctx, d, nil)
	if err != nil {
		return 0, err
	}
	if d.c.query == nil {
		return 0, e.createWithColumns(ctx, d, opts)
	}
	return e.ctas(ctx, sess, d, opts)
}

// tableDef is a CREATE TABLE statement as read: the new table's name
// and mount, its schema, the text of its columns (the column list, or
// the query's as QueryColumns gives them) and its clauses.
type tableDef struct {
	ref         catalog.TableRef
	mt          *catalog.Mount
	ifNotExists bool
	schema      *iceberg.Schema
	columns     string
	c           tableClauses
	// loc is the location placeTable gave the table ("": the catalog
	// chooses), chosen whether the client named it; claimed are the
	// places the client chose.
	loc     string
	chosen  bool
	claimed []string
	// replacing is the table a CREATE OR REPLACE replaces: its places are
	// not taken from the new table's.
	replacing *catalog.TableRef
}

// readTableDef reads CREATE TABLE [IF NOT EXISTS] name (columns) … or
// … AS query: DuckDB types the columns (for AS, of the query, whose
// reads are authorized with CREATE on the name).
func (e *Executor) readTableDef(ctx context.Context, sess planner.Session, t *parse.CreateTable) (*tableDef, error) {
	d := &tableDef{ifNotExists: t.IfNotExists, columns: t.Columns, c: clausesOf(t)}
	withColumns := t.As == nil
	ref, err := planner.TableName(sess, t.Name)
	if err != nil {
		return nil, err
	}
	d.ref = e.ExistingSchema(ctx, ref)
	if !withColumns {
		if err := e.Authorize(ctx, authz.TableObject(d.ref), authz.Create); err != nil {
			return nil, err
		}
	}
	if d.mt, err = e.Mount(d.ref.Catalog); err != nil {
		return nil, err
	}
	if !withColumns {
		if d.columns, err = e.QueryColumns(ctx, sess, d.c.query); err != nil {
			return nil, err
		}
	}
	if d.schema, err = e.ParseColumns(ctx, d.ref.Table, d.columns); err != nil {
		return nil, err
	}
	return d, nil
}

// createWithColumns makes the table of CREATE TABLE name (columns) ….
func (e *Executor) createWithColumns(ctx context.Context, d *tableDef, opts []icecat.CreateTableOpt) error {
	ref := d.ref
	_, err := d.mt.Catalog.CreateTable(ctx, ref.Ident(), d.schema, opts...)
	switch {
	case err == nil:
		return e.stillFree(ctx, d, ref, true)
	case errors.Is(err, icecat.ErrTableAlreadyExists), errors.Is(err, icecat.ErrViewAlreadyExists):
		if d.ifNotExists && errors.Is(err, icecat.ErrTableAlreadyExists) {
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
// [WITH (…)] AS query: the table is made and filled under a staging
// name, at the location its own name gets (tableOpts), then renamed.
func (e *Executor) ctas(ctx context.Context, sess planner.Session, d *tableDef, opts []icecat.CreateTableOpt) (int64, error) {
	ref, mt := d.ref, d.mt
	if dr := planner.DryRunOf(ctx); dr != nil {
		return 0, e.explainCTAS(ctx, sess, dr, ref, d.columns, d.c.query)
	}
	create := func(staging catalog.TableRef, at []icecat.CreateTableOpt) error {
		if _, err := mt.Internal().CreateTable(ctx, staging.Ident(), d.schema, append(opts, at...)...); err != nil {
			if errors.Is(err, icecat.ErrNoSuchNamespace) {
				return fmt.Errorf("%w: schema %s.%s", planner.ErrNotFound, ref.Catalog, ref.Schema)
			}
			return fmt.Errorf("%w: create table %s: %v", planner.ErrInvalid, ref, err)
		}
		return e.stillFree(ctx, d, staging, false)
	}
	fill := func(tgt *planner.WriteTarget) (int64, error) { return e.insertSelect(ctx, sess, tgt, nil, d.c.query) }
	n, err := e.staged(ctx, mt.Internal(), ref, false, create, fill)
	if d.ifNotExists && errors.Is(err, planner.ErrExists) {
		return 0, nil
	}
	return n, err
}

// tableClauses are the clauses of CREATE TABLE after its name (and
// column list): PARTITIONED BY, ORDERED BY, WITH and, for CREATE TABLE …
// AS, the query (nil with a column list).
type tableClauses struct {
	partItems []parse.PartitionItem
	sortItems []parse.SortItem
	props     iceberg.Properties // WITH, over the commit retries icefloe sets
	query     *parse.Statement
}

// clausesOf are the clauses of t, its properties over the commit retries
// icefloe sets.
func clausesOf(t *parse.CreateTable) tableClauses {
	c := tableClauses{partItems: t.Partition, sortItems: t.Order, query: t.As,
		props: iceberg.Properties{table.CommitNumRetriesKey: strconv.Itoa(planner.DefaultCommitRetries)}}
	for k, v := range t.With {
		c.props[k] = v
	}
	return c
}

// tableOpts checks the definition d of a new table and returns the
// catalog's options that make it (placeTable: where its files go);
// replacing is the table a CREATE OR REPLACE takes the place of (nil
// for a new one).
func (e *Executor) tableOpts(ctx context.Context, d *tableDef, replacing *planner.WriteTarget) ([]icecat.CreateTableOpt, error) {
	spec, err := planner.PartitionSpec(d.schema, d.c.partItems)
	if err != nil {
		return nil, err
	}
	order, err := planner.SortOrderOf(d.schema, d.c.sortItems)
	if err != nil {
		return nil, err
	}
	if err := encryptionProps(ctx, d.mt, d.c.props); err != nil {
		return nil, err
	}
	opts, err := e.placeTable(ctx, d, replacing)
	if err != nil {
		return nil, err
	}
	return append(opts, icecat.WithPartitionSpec(&spec), icecat.WithSortOrder(order), icecat.WithProperties(d.c.props)), nil
}

// placeTable decides where a new table's files go, and turns "location"
// into the table's location (it is not a table property). Without a
// location in its properties a table gets a folder of its own
// (catalog.Mount.TableLocation). A location, or a property placing files
// (catalog.PlacesFiles) outside the table's own location, is one the
// client chose: it needs the LOCATION privilege on the table, must be
// under the catalog's allowed locations, and must be free (no other
// table's place is, holds or lies in it; it is no schema folder or
// warehouse and holds none) — replacing, the table a CREATE OR REPLACE
// replaces, aside.
func (e *Executor) placeTable(ctx context.Context, d *tableDef, replacing *planner.WriteTarget) ([]icecat.CreateTableOpt, error) {
	props := d.c.props
	if err := planner.CheckPlacement(d.mt, props); err != nil {
		return nil, err
	}
	loc, chosen := props[catalog.LocationKey]
	delete(props, catalog.LocationKey)
	if !chosen {
		loc = d.mt.TableLocation(ctx, d.ref)
	}
	d.loc, d.chosen = loc, chosen
	d.claimed = catalog.ClientPlaces(loc, chosen, props)
	if replacing != nil {
		d.replacing = &replacing.Ref
	}
	if len(d.claimed) > 0 {
		if err := e.Authorize(ctx, authz.TableObject(d.ref), authz.Create, authz.Location); err != nil {
			return nil, err
		}
		if err := e.free(ctx, d.claimed, d.replacing); err != nil {
			return nil, err
		}
	}
	if loc == "" {
		return nil, nil
	}
	return []icecat.CreateTableOpt{icecat.WithLocation(loc)}, nil
}

// placeProps checks the properties ALTER TABLE … SET TBLPROPERTIES sets
// on tgt as placeTable checks a new table's: one that places files
// outside tgt's location needs LOCATION on it and a place free of every
// other table.
func (e *Executor) placeProps(ctx context.Context, tgt *planner.WriteTarget, props iceberg.Properties) error {
	claimed := catalog.ClientPlaces(tgt.Pinned.Table.Location(), false, props)
	if len(claimed) == 0 {
		return nil
	}
	if err := e.Authorize(ctx, authz.TableObject(tgt.Ref), authz.Location); err != nil {
		return err
	}
	return e.free(ctx, claimed, &tgt.Ref)
}

// free refuses locs unless they are free of every table but except
// (catalog.Mounts.CheckFree; nil: every table): ErrRefused, or the reason
// every table could not be seen.
func (e *Executor) free(ctx context.Context, locs []string, except *catalog.TableRef) error {
	var skip []catalog.TableRef
	if except != nil {
		skip = append(skip, *except)
	}
	err := e.opts.Mounts.CheckFree(ctx, locs, skip...)
	if errors.Is(err, catalog.ErrTaken) || errors.Is(err, catalog.ErrLocation) {
		return fmt.Errorf("%w: %w", planner.ErrRefused, err)
	}
	return err
}

// stillFree checks, once the table ref of d is made, that the places its
// client chose are still free of every other table — two creates at one
// location, each checked before the other made its table, would both
// pass — and otherwise drops it (when drop is set; a staging table's
// caller drops it) and refuses.
func (e *Executor) stillFree(ctx context.Context, d *tableDef, ref catalog.TableRef, drop bool) error {
	if len(d.claimed) == 0 {
		return nil
	}
	self := []catalog.TableRef{ref}
	if d.replacing != nil {
		self = append(self, *d.replacing)
	}
	err := e.opts.Mounts.CheckFree(ctx, d.claimed, self...)
	if err == nil {
		return nil
	}
	if drop {
		_ = d.mt.Internal().DropTable(context.WithoutCancel(ctx), ref.Ident())
	}
	if errors.Is(err, catalog.ErrTaken) {
		return fmt.Errorf("%w: %w (taken by another statement meanwhile; nothing was made)", planner.ErrRefused, err)
	}
	return err
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
	d.NoteWritePlan(plan.Into(iceplan.SinkAppend, ref.String(), 0))
	d.Note("write", "%d fragments on the workers, each writing Parquet files of %s", len(plan.Endpoints), ref)
	return d.Commit("create the table, then append the written files in one snapshot")
}
