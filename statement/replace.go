package statement

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/planner"
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
//     the same schema, made as mode create makes a table (in a folder of
//     its own, named after the table). Only after its
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

// replace runs bulk ingest mode replace once the caller holds INSERT and
// DELETE on ref (replacing every row deletes them all); its steps then
// run on the mount's internal catalog, which leaves the privilege checks
// to what was authorized here and in replaceStaged.
func (e *Executor) replace(ctx context.Context, mt *catalog.Mount, ref catalog.TableRef, in Ingest) (int64, error) {
	if err := e.Authorize(ctx, authz.TableObject(ref), authz.Insert, authz.Delete); err != nil {
		return 0, err
	}
	if err := e.RefuseRestrictedWrite(ctx, ref, "bulk ingest replace"); err != nil {
		// It deletes the rows the caller's row filter hides too.
		return 0, err
	}
	return e.ingestReplace(ctx, mt.Internal(), ref, in)
}

// ingestReplace runs bulk ingest mode replace on the existing table ref.
func (e *Executor) ingestReplace(ctx context.Context, cat icecat.Catalog, ref catalog.TableRef, in Ingest) (int64, error) {
	schema, err := ingestSchema(in.Rows.Schema())
	if err != nil {
		return 0, err
	}
	tgt, err := e.LoadTargetRef(ctx, ref)
	if err != nil {
		return 0, err
	}
	if sameShape(tgt.Pinned.Table.Schema(), schema) {
		res, err := e.ingestWrite(ctx, tgt, in.Rows)
		if err != nil {
			return 0, err
		}
		return e.finishReplace(ctx, tgt, res, nil)
	}
	return e.replaceStaged(ctx, cat, tgt.Mount().TableLocation(ctx, ref), ref, schema, in)
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

// replaceStaged replaces ref by a new table of schema at loc holding the
// stream: written and committed into a staging table first, then
// swapped in.
func (e *Executor) replaceStaged(ctx context.Context, cat icecat.Catalog, loc string, ref catalog.TableRef, schema *iceberg.Schema, in Ingest) (int64, error) {
	// A new shape drops the table and makes another in its place.
	if err := e.Authorize(ctx, authz.TableObject(ref), authz.Drop, authz.Create); err != nil {
		return 0, err
	}
	create := func(staging catalog.TableRef, at []icecat.CreateTableOpt) error {
		if err := createIngestTable(ctx, cat, staging, schema, loc, at); err != nil {
			return fmt.Errorf("ingest into %s: staging table for replace: %w", ref, err)
		}
		return nil
	}
	fill := func(tgt *planner.WriteTarget) (int64, error) {
		res, err := e.ingestWrite(ctx, tgt, in.Rows)
		if err != nil {
			return 0, err
		}
		return e.finishAppend(ctx, tgt, res)
	}
	return e.staged(ctx, cat, ref, true, create, fill)
}
