package planner

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
)

// Bulk ingest mode replace (ADBC "replace") on an existing table.
//
// The old table is never dropped first: until the new rows are committed,
// readers see the old table and a failure of any kind (client error, NULL
// in a NOT NULL column, a worker that dies, a lost commit) leaves it as it
// was.
//
//   - Same shape (the stream's schema, as ingestSchema makes it, has the
//     table's column names in the table's order with the same Iceberg
//     types): the table is replaced in place. The stream's files are
//     written as an append writes them, then one commit removes every live
//     data and delete file of the current snapshot and adds the new files:
//     one snapshot, with the table's history, partition spec, sort order
//     and properties kept (the old snapshots stay readable by time travel).
//   - Different shape: the rows go into a staging table (see staged) in
//     the same schema, made as mode create makes a table. Only after its
//     commit succeeded is the old table dropped (not purged) and the
//     staging table renamed to the old name.
//     Between that drop and the rename a reader sees no table, for the
//     time of two catalog calls; a rename that fails leaves the data in
//     the staging table, whose name the error gives.
//
// One transaction that swaps the schema (UpdateSchema deleting every column)
// and the files was not chosen: it would also have to reset the partition
// spec and sort order, whose source columns it deletes, which iceberg-go
// v0.7.0 does not do cleanly.

// replaceAttempts is how many times a same-shape replace lists the table's
// files and commits, each time from a freshly loaded table, when a
// concurrent commit got in between (as patient as an append).
const replaceAttempts = appendAttempts

// replace runs bulk ingest mode replace once the caller holds INSERT and
// DELETE on ref (replacing every row deletes them all); its steps then
// run on the mount's internal catalog, which leaves the privilege checks
// to what was authorized here and in replaceStaged.
func (p *Planner) replace(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, in Ingest) (int64, error) {
	if err := p.Authorize(ctx, authz.TableObject(ref), authz.Insert, authz.Delete); err != nil {
		return 0, err
	}
	return p.ingestReplace(ctx, mt.Internal(), ref, in)
}

// ingestReplace runs bulk ingest mode replace on the existing table ref.
func (p *Planner) ingestReplace(ctx context.Context, cat icecat.Catalog, ref catalog.TableRef, in Ingest) (int64, error) {
	schema, err := ingestSchema(in.Rows.Schema())
	if err != nil {
		return 0, err
	}
	tgt, err := p.loadTargetRef(ctx, ref)
	if err != nil {
		return 0, err
	}
	if sameShape(tgt.Pinned.Table.Schema(), schema) {
		res, err := p.ingestWrite(ctx, tgt, in.Rows)
		if err != nil {
			return 0, err
		}
		return p.commitReplace(ctx, tgt, res)
	}
	return p.replaceStaged(ctx, cat, ref, schema, in)
}

// sameShape tells whether a table of schema cur takes a stream of schema
// in (from ingestSchema) in place: the same column names in the same order,
// of the same Iceberg types (nested fields compared by name, type and
// nullability, field ids aside). Top-level nullability may differ: a NULL
// reaching a NOT NULL column fails in ingestConform.
func sameShape(cur, in *iceberg.Schema) bool {
	a, b := cur.Fields(), in.Fields()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !sameType(a[i].Type, b[i].Type) {
			return false
		}
	}
	return true
}

func sameType(a, b iceberg.Type) bool {
	switch x := a.(type) {
	case *iceberg.StructType:
		y, ok := b.(*iceberg.StructType)
		if !ok || len(x.FieldList) != len(y.FieldList) {
			return false
		}
		for i, f := range x.FieldList {
			g := y.FieldList[i]
			if f.Name != g.Name || f.Required != g.Required || !sameType(f.Type, g.Type) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		y, ok := b.(*iceberg.ListType)
		return ok && x.ElementRequired == y.ElementRequired && sameType(x.Element, y.Element)
	case *iceberg.MapType:
		y, ok := b.(*iceberg.MapType)
		return ok && x.ValueRequired == y.ValueRequired && sameType(x.KeyType, y.KeyType) && sameType(x.ValueType, y.ValueType)
	}
	switch b.(type) {
	case *iceberg.StructType, *iceberg.ListType, *iceberg.MapType:
		return false
	}
	return a.Equals(b)
}

// commitReplace commits res in place of every live file of the target's
// current snapshot, in one snapshot.
//
// Concurrency: the files to remove are listed from the metadata the
// transaction starts from, and the transaction asserts (AssertRefSnapshotID)
// that main still points at that snapshot. iceberg-go's refresh-and-replay
// would otherwise rebuild the snapshot on top of a concurrent commit and
// keep that commit's files: its overwrite validator refuses concurrent
// appends only under write.update.isolation-level=serializable (the
// default); under snapshot a concurrent append would survive the replace
// (TestIngestReplaceConcurrentAppends shows it), and a concurrent delete
// file could dangle. With the assertion (a pinned ref, which iceberg-go
// never rewrites on replay) a concurrent commit fails the attempt
// (ErrCommitFailed → ErrConflict) instead, and the next attempt lists the
// files again from a freshly loaded table. If every
// attempt loses, or the table was dropped or replaced meanwhile, nothing is
// committed and the new files are deleted; the old table is untouched.
func (p *Planner) commitReplace(ctx context.Context, tgt *WriteTarget, res *writeResults) (int64, error) {
	return p.commitReplaceWith(ctx, tgt, res, nil)
}

// commitReplaceWith is commitReplace that also sets props in the same
// snapshot's commit.
func (p *Planner) commitReplaceWith(ctx context.Context, tgt *WriteTarget, res *writeResults, props iceberg.Properties) (int64, error) {
	tableUUID := tgt.Pinned.Table.Metadata().TableUUID()
	v3 := tgt.Pinned.Table.Metadata().Version() >= 3
	var err error
	for attempt := range replaceAttempts {
		if attempt > 0 {
			if serr := commit.Backoff(ctx, attempt); serr != nil {
				break
			}
			fresh, lerr := p.opts.Mounts.LoadTable(ctx, tgt.Ref)
			if lerr != nil {
				err = fmt.Errorf("%w on %s: reload after a lost commit: %v", ErrConflict, tgt.Ref, lerr)
				break
			}
			if fresh.Table.Metadata().TableUUID() != tableUUID {
				err = fmt.Errorf("%w on %s: the table was dropped or replaced during the ingest", ErrConflict, tgt.Ref)
				break
			}
			tgt.Pinned = fresh
		}
		fsys, ferr := tgt.Pinned.Table.FS(ctx)
		if ferr != nil {
			err = fmt.Errorf("commit to %s: %w", tgt.Ref, ferr)
			break
		}
		err = p.commitWith(ctx, tgt, !v3, func(tx *table.Transaction, base table.Metadata) error {
			if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
				return err
			}
			if len(props) > 0 {
				if err := tx.SetProperties(props); err != nil {
					return err
				}
			}
			data, deletes, err := liveFiles(base, fsys)
			if err != nil {
				return err
			}
			files, err := withFirstRowIDs(base, res.added)
			if err != nil {
				return err
			}
			if len(data) == 0 && len(deletes) == 0 && len(files) == 0 {
				return nil
			}
			return tx.ReplaceFiles(ctx, data, files, deletes, nil)
		})
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	if err != nil {
		return 0, p.keepOrRemove(tgt, err, res.added)
	}
	return res.rows, nil
}

// liveFiles lists the live data files and delete files (positional,
// equality, deletion vectors) of meta's current snapshot, each once.
func liveFiles(meta table.Metadata, fsys iceio.IO) (data, deletes []iceberg.DataFile, err error) {
	snap := meta.CurrentSnapshot()
	if snap == nil {
		return nil, nil, nil
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, nil, fmt.Errorf("list manifests: %w", err)
	}
	seen := map[string]bool{}
	for _, mf := range manifests {
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return nil, nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED {
				continue
			}
			df := e.DataFile()
			key := fmt.Sprintf("%d\x00%s", df.ContentType(), df.FilePath())
			if df.ContentOffset() != nil {
				// Deletion vectors share one Puffin file; each blob is its
				// own delete file.
				key += fmt.Sprintf("\x00%d", *df.ContentOffset())
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if df.ContentType() == iceberg.EntryContentData {
				data = append(data, df)
			} else {
				deletes = append(deletes, df)
			}
		}
	}
	return data, deletes, nil
}

// replaceStaged replaces ref by a new table of schema holding the stream:
// written and committed into a staging table first, then swapped in.
func (p *Planner) replaceStaged(ctx context.Context, cat icecat.Catalog, ref catalog.TableRef, schema *iceberg.Schema, in Ingest) (int64, error) {
	// A new shape drops the table and makes another in its place.
	if err := p.Authorize(ctx, authz.TableObject(ref), authz.Drop, authz.Create); err != nil {
		return 0, err
	}
	create := func(staging catalog.TableRef) error {
		if err := createIngestTable(ctx, cat, staging, schema); err != nil {
			return fmt.Errorf("ingest into %s: staging table for replace: %w", ref, err)
		}
		return nil
	}
	fill := func(tgt *WriteTarget) (int64, error) {
		res, err := p.ingestWrite(ctx, tgt, in.Rows)
		if err != nil {
			return 0, err
		}
		return p.commitAppend(ctx, tgt, res)
	}
	return p.staged(ctx, cat, ref, true, create, fill)
}
