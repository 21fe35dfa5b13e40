package statement

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/tablecrypt"
	"github.com/icefloe/icefloe/planner"
)

// CREATE OR REPLACE TABLE name (cols) … | AS query.
//
// Without a table of that name it is CREATE TABLE. Over an existing table
// the old table is never dropped first, and a failure leaves it as it
// was:
//
//   - the same definition (equal schema with its field ids, partition
//     spec, sort order, format version and encryption key, and no other
//     location named): the query's rows are written as an INSERT into the
//     table would write them, under its location, and one commit replaces
//     every live data and delete file with them and sets the new
//     properties, so readers see the old rows or the new ones and the
//     history stays;
//   - otherwise the new table is made, and for AS filled, under a staging
//     name (catalog.StagingName, hidden from listings, dropped by a
//     starting coordinator if left behind) in a folder of its own, exactly
//     as CREATE TABLE would make it; then the old table is dropped (not
//     purged) and the staging table renamed to its name, as bulk ingest
//     replace does with a new shape (staged): for the time of those two
//     catalog calls a reader finds no table.

// createOrReplace runs CREATE OR REPLACE TABLE.
func (e *Executor) createOrReplace(ctx context.Context, sess planner.Session, t *parse.CreateTable) (int64, error) {
	tgt, err := e.LoadTarget(ctx, sess, t.Name, authz.Drop, authz.Create)
	if errors.Is(err, planner.ErrNotFound) {
		return e.createTable(ctx, sess, t)
	}
	if err != nil {
		return 0, err
	}
	if tgt.Branch != "" {
		return 0, fmt.Errorf("%w: CREATE OR REPLACE TABLE while writing to branch %s", planner.ErrUnsupported, tgt.Branch)
	}
	d, err := e.readTableDef(ctx, sess, t)
	if err != nil {
		return 0, err
	}
	d.ref, d.mt = tgt.Ref, tgt.Mount()
	if dr := planner.DryRunOf(ctx); dr != nil {
		if d.c.query == nil {
			return 0, fmt.Errorf("%w: EXPLAIN of CREATE OR REPLACE TABLE without AS", planner.ErrUnsupported)
		}
		return 0, e.explainCTAS(ctx, sess, dr, d.ref, d.columns, d.c.query)
	}
	opts, err := e.tableOpts(ctx, d, tgt)
	if err != nil {
		return 0, err
	}
	same, err := sameDefinition(tgt.Pinned.Table, d, opts)
	if err != nil {
		return 0, err
	}
	if same {
		return e.replaceInPlace(ctx, sess, tgt, d)
	}
	mt := tgt.Mount()
	create := func(staging catalog.TableRef, at []icecat.CreateTableOpt) error {
		if _, err := mt.Internal().CreateTable(ctx, staging.Ident(), d.schema, append(opts, at...)...); err != nil {
			return fmt.Errorf("%w: create or replace table %s: %v", planner.ErrInvalid, d.ref, err)
		}
		return e.stillFree(ctx, d, staging, false)
	}
	fill := func(st *planner.WriteTarget) (int64, error) {
		if d.c.query == nil {
			return 0, nil
		}
		return e.insertSelect(ctx, sess, st, nil, d.c.query)
	}
	return e.staged(ctx, mt.Internal(), d.ref, true, create, fill)
}

// sameDefinition tells whether the table d would make (with opts) takes
// the place of old in place: files written for one are files of the
// other, under old's location.
func sameDefinition(old *table.Table, d *tableDef, opts []icecat.CreateTableOpt) (bool, error) {
	cfg := icecat.NewCreateTableCfg()
	for _, o := range opts {
		o(&cfg)
	}
	made, err := table.NewMetadata(d.schema, cfg.PartitionSpec, cfg.SortOrder, old.Location(), cfg.Properties)
	if err != nil {
		return false, fmt.Errorf("%w: create or replace table %s: %v", planner.ErrInvalid, d.ref, err)
	}
	a := old.Metadata()
	if d.chosen && !(catalog.Under(d.loc, old.Location()) && catalog.Under(old.Location(), d.loc)) {
		return false, nil
	}
	return a.Version() == made.Version() && old.Schema().Equals(made.CurrentSchema()) &&
		old.Spec().Equals(made.PartitionSpec()) && old.SortOrder().Equals(made.SortOrder()) &&
		old.Properties()[tablecrypt.KeyIDProp] == d.c.props[tablecrypt.KeyIDProp], nil
}

// replaceInPlace runs a CREATE OR REPLACE TABLE of tgt's own definition:
// the query's rows (none without AS) written as an INSERT writes them,
// then committed in place of every live file of tgt with d's properties
// that differ from tgt's (its encryption key aside: it keeps its own),
// in one snapshot (replaceTable's rules for concurrent commits).
func (e *Executor) replaceInPlace(ctx context.Context, sess planner.Session, tgt *planner.WriteTarget, d *tableDef) (int64, error) {
	props := iceberg.Properties{}
	for k, v := range d.c.props {
		if k != tablecrypt.KeyIDProp && k != tablecrypt.WrappedKeyProp && tgt.Pinned.Table.Properties()[k] != v {
			props[k] = v
		}
	}
	res := &writeResults{}
	if d.c.query != nil {
		var err error
		if res, err = e.writeSelect(ctx, sess, tgt, nil, d.c.query); err != nil {
			return 0, err
		}
	}
	return e.finishReplace(ctx, tgt, res, props)
}
