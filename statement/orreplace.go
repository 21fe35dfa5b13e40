package statement

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/planner"
)

// CREATE OR REPLACE TABLE name (cols) … | AS query.
//
// Without a table of that name it is CREATE TABLE. Over an existing table
// the old table is never dropped first: the new table is made, and for AS
// filled, under a staging name (catalog.StagingName, hidden from listings and
// dropped by a starting coordinator if left behind) in the same schema,
// exactly as CREATE TABLE would make it; a failure until then drops the
// staging table and leaves the old one as it was. Then:
//
//   - the same definition (equal schema with its field ids, partition
//     spec, sort order and format version): one commit on the old table
//     replaces every live data and delete file with the staging table's
//     files and sets the new properties, so readers see the old rows or
//     the new ones; the staging table is dropped (its files now belong to
//     the old table, and stay where the staging table wrote them, under
//     the same schema's folder of the warehouse), the history stays;
//   - otherwise the old table is dropped (not purged) and the staging
//     table renamed to its name, as bulk ingest replace does with a new
//     shape (swapStaged): for the time of those two catalog calls a reader
//     finds no table.

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
	ref := tgt.Ref
	staging := ref
	staging.Table = catalog.StagingName(ref.Table)
	// CREATE TABLE "catalog"."schema"."staging" and the rest as written.
	made := *t
	made.Name = []string{staging.Catalog, staging.Schema, staging.Table}
	n, err := e.createTable(ctx, sess, &made)
	if err != nil {
		return 0, err
	}
	cat := tgt.Mount().Internal()
	st, err := e.LoadTargetRef(ctx, staging)
	if err != nil {
		return 0, err
	}
	if !sameDefinition(tgt.Pinned.Table, st.Pinned.Table) {
		if err := swapStaged(ctx, cat, ref, staging, "create or replace table"); err != nil {
			return 0, err
		}
		return n, nil
	}
	if err := e.replaceWithStaged(ctx, tgt, st); err != nil {
		if derr := catalog.PurgeStaging(context.WithoutCancel(ctx), cat, staging.Ident()); derr != nil {
			return 0, fmt.Errorf("%w (table %s is unchanged; dropping the staging table %s failed: %v)", err, ref, staging, derr)
		}
		return 0, err
	}
	// The files are the table's now: drop the staging table, keep them.
	if err := cat.DropTable(context.WithoutCancel(ctx), staging.Ident()); err != nil {
		tracing.Logger(ctx, e.log).Warn("planner: drop the staging table of a replace", zap.String("table", staging.String()), zap.Error(err))
	}
	return n, nil
}

// sameDefinition tells whether a table made as new takes the place of
// old in place: files written for one are files of the other.
func sameDefinition(old, made *table.Table) bool {
	a, b := old.Metadata(), made.Metadata()
	return a.Version() == b.Version() && old.Schema().Equals(made.Schema()) &&
		old.Spec().Equals(made.Spec()) && old.SortOrder().Equals(made.SortOrder())
}

// replaceWithStaged commits, on tgt, the live files of the staging table
// st in place of every live file of tgt, and st's properties, in one
// snapshot (commitReplace's rules for concurrent commits).
func (e *Executor) replaceWithStaged(ctx context.Context, tgt, st *planner.WriteTarget) error {
	fsys, err := st.Pinned.Table.FS(ctx)
	if err != nil {
		return err
	}
	files, _, err := liveFiles(st.Pinned.Table.Metadata(), fsys)
	if err != nil {
		return err
	}
	props := iceberg.Properties{}
	for k, v := range st.Pinned.Table.Properties() {
		if tgt.Pinned.Table.Properties()[k] != v {
			props[k] = v
		}
	}
	var rows int64
	for _, f := range files {
		rows += f.Count()
	}
	res := &writeResults{Added: files, Rows: rows}
	_, err = e.commitReplace(ctx, tgt, res, props)
	return err
}

// swapStaged drops ref (not purged) and renames staging, which holds its
// new rows, to ref's name. If the drop fails, staging is purged and ref is
// as it was. Between the two catalog calls a reader finds no table.
func swapStaged(ctx context.Context, cat icecat.Catalog, ref, staging catalog.TableRef, what string) error {
	if err := cat.DropTable(ctx, ref.Ident()); err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
		err = fmt.Errorf("%s %s: drop for replace: %w", what, ref, err)
		if derr := catalog.PurgeStaging(context.WithoutCancel(ctx), cat, staging.Ident()); derr != nil {
			return fmt.Errorf("%w (table %s is unchanged; dropping the staging table %s failed: %v)", err, ref, staging, derr)
		}
		return err
	}
	if _, err := cat.RenameTable(context.WithoutCancel(ctx), staging.Ident(), ref.Ident()); err != nil {
		// No sentinel: the client gets Internal. The staging table is
		// kept, it holds the data now.
		return fmt.Errorf("%s %s: the old table was dropped but renaming the new one failed; its rows are in table %s: %v", what, ref, staging, err)
	}
	return nil
}
