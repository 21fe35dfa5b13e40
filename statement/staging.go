package statement

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/planner"
)

// staged runs a statement that makes the table ref (CREATE TABLE … AS,
// bulk ingest create, a replace that changes the table's shape): create
// makes it under a staging name (catalog.StagingName, left out of every
// listing), fill writes and commits its rows there, and only then is it
// renamed to ref, after dropping the table ref names when replace is set.
// Until then any failure purges the staging table (catalog.PurgeStaging:
// the files it references), so ref never shows a table without its rows;
// a coordinator that dies meanwhile leaves only a staging table, which
// the next start drops (catalog.Mounts.DropStaging). The staging table is
// made at the location ref gets (create's concern: a folder of its own,
// named after ref), so the table keeps no trace of its staging name.
// cat is the mount's internal catalog: the caller authorized the
// statement as a whole.
func (e *Executor) staged(ctx context.Context, cat icecat.Catalog, ref catalog.TableRef, replace bool, create func(staging catalog.TableRef, at []icecat.CreateTableOpt) error, fill func(tgt *planner.WriteTarget) (int64, error)) (int64, error) {
	staging := ref
	staging.Table = catalog.StagingName(ref.Table)
	drop := func(err error) (int64, error) {
		if derr := catalog.PurgeStaging(context.WithoutCancel(ctx), cat, staging.Ident()); derr != nil {
			return 0, fmt.Errorf("%w (table %s is unchanged; dropping the staging table %s failed: %v)", err, ref, staging, derr)
		}
		return 0, err
	}
	if err := create(staging, nil); err != nil {
		// A create cancelled midway may have made the table all the same.
		return drop(err)
	}
	tgt, err := e.planner.LoadMadeTarget(ctx, staging)
	if err != nil {
		return drop(err)
	}
	if loc, ok := ownLocation(tgt.Pinned.Table.Location(), ref); ok {
		// The catalog chose a folder named after the staging table: make
		// it again in the same folder under one named after ref.
		if err := catalog.PurgeStaging(ctx, cat, staging.Ident()); err != nil {
			return 0, fmt.Errorf("create table %s: %w", ref, err)
		}
		if err := create(staging, []icecat.CreateTableOpt{icecat.WithLocation(loc)}); err != nil {
			return drop(err)
		}
		if tgt, err = e.planner.LoadMadeTarget(ctx, staging); err != nil {
			return drop(err)
		}
	}
	n, err := fill(tgt)
	if err != nil {
		if !errors.Is(err, planner.ErrCommitUnknown) {
			return drop(err)
		}
		// The staging table's only commit is this statement's.
		if n, err = e.stagedRows(ctx, staging); err != nil {
			return drop(err)
		}
	}
	if replace {
		if err := cat.DropTable(ctx, ref.Ident()); err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
			return drop(fmt.Errorf("%s: drop for replace: %w", ref, err))
		}
	}
	if _, err := cat.RenameTable(context.WithoutCancel(ctx), staging.Ident(), ref.Ident()); err != nil {
		if replace {
			// No sentinel: the client gets Internal. The staging table
			// is kept, it holds the data now.
			return 0, fmt.Errorf("%s: the old table was dropped but renaming the new one failed; its rows are in table %s: %v", ref, staging, err)
		}
		if errors.Is(err, icecat.ErrTableAlreadyExists) {
			return drop(fmt.Errorf("%w: table %s (made by another statement meanwhile; nothing was committed)", planner.ErrExists, ref))
		}
		return drop(fmt.Errorf("create table %s: nothing was committed: %w", ref, err))
	}
	return n, nil
}

// stagedRows is the row count of a staging table's commit whose outcome
// was unknown: the rows its snapshot added, or planner.ErrCommitUnknown's
// error if it has none (the commit did not land).
func (e *Executor) stagedRows(ctx context.Context, ref catalog.TableRef) (int64, error) {
	pinned, err := e.opts.Mounts.LoadTable(context.WithoutCancel(ctx), ref)
	if err != nil {
		return 0, err
	}
	snap := pinned.Table.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0, fmt.Errorf("%w: %s has no snapshot", planner.ErrConflict, ref)
	}
	n, err := strconv.ParseInt(snap.Summary.Properties["added-records"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: added-records: %v", planner.ErrConflict, ref, err)
	}
	return n, nil
}

// ownLocation is a location in the folder of loc named for ref
// (catalog.TableLocationIn), when loc, a staging table's, is named after
// the staging table: where a catalog that chooses its tables' locations
// (a REST catalog whose schema folder cannot be told) put it.
func ownLocation(loc string, ref catalog.TableRef) (string, bool) {
	loc = strings.TrimSuffix(loc, "/")
	i := strings.LastIndexByte(loc, '/')
	if i < 0 || !catalog.IsStaging(loc[i+1:]) {
		return "", false
	}
	return catalog.TableLocationIn(loc[:i], ref.Table), true
}
