package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/wire"
)

// Errors of the write path.
var (
	// ErrConflict: the statement's commit lost to concurrent commits even
	// after retrying against the refreshed table; its files were deleted and
	// nothing was committed (Aborted).
	ErrConflict = commit.ErrConflict
	// ErrCommitUnknown: the commit failed in a way that leaves its outcome
	// unknown (the catalog may have applied it); the statement's files were
	// kept (Unknown).
	ErrCommitUnknown = commit.ErrUnknown
	// ErrWriteFailed: a write fragment failed, e.g. its worker went away;
	// nothing was committed and the statement's files were deleted
	// (Aborted).
	ErrWriteFailed = errors.New("planner: write failed, nothing was committed")
)

// WriteTarget is the pinned table a statement writes.
type WriteTarget struct {
	Ref    catalog.TableRef
	mount  *catalog.Mount
	Pinned *catalog.Pinned // the table as the statement loaded it
	// made says the statement made the table itself (CTAS, an ingest
	// that creates, a replace's staging table): it was authorized as a
	// whole, so commits go through the mount's internal catalog rather
	// than needing a write privilege on the new table.
	made bool
	// Branch is the branch the statement commits to; "" is main.
	Branch string
}

// LoadMadeTarget pins the table ref that the statement made itself
// (CREATE TABLE … AS, an ingest that creates, a replace's staging
// table): the statement was authorized as a whole, so its commits go
// through the mount's internal catalog without a privilege check on the
// new table.
func (p *Planner) LoadMadeTarget(ctx context.Context, ref catalog.TableRef) (*WriteTarget, error) {
	tgt, err := p.LoadTargetRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	tgt.made = true
	return tgt, nil
}

// Mount is the mounted catalog that holds the target table.
func (t *WriteTarget) Mount() *catalog.Mount { return t.mount }

// Made says the statement made the table itself (LoadMadeTarget): its
// commits go through the mount's internal catalog.
func (t *WriteTarget) Made() bool { return t.made }

// Unreachable tells the worker pool, if it listens, that loc failed as
// unreachable.
func (p *Planner) Unreachable(loc string) {
	if r, ok := p.opts.Workers.(UnreachableReporter); ok {
		r.Unreachable(loc)
	}
}

// LoadTarget pins the table parts names (unqualified parts take sess's
// catalog and schema; a name is resolved as queries resolve it, a Spark
// branch name as its branch) once the caller holds each of privs on it.
// The branch is the session's write-audit-publish branch where the table
// takes one.
func (p *Planner) LoadTarget(ctx context.Context, sess Session, parts []string, privs ...authz.Privilege) (*WriteTarget, error) {
	ref, err := TableName(sess, parts)
	if err != nil {
		return nil, err
	}
	tgt, err := p.LoadTargetRef(ctx, ref, privs...)
	if err == nil {
		tgt.Branch = sessionBranch(sess, tgt.Pinned.Table)
		return tgt, nil
	}
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrDenied) {
		return nil, err
	}
	// Not as written: resolve the name as queries do (names.go).
	canon, rerr := p.resolveRef(ctx, ref, nil)
	if rerr == nil && canon != ref {
		tgt, err := p.LoadTargetRef(ctx, canon, privs...)
		if err != nil {
			return nil, err
		}
		tgt.Branch = sessionBranch(sess, tgt.Pinned.Table)
		return tgt, nil
	}
	if _, _, spark := sparkRefName(parts, true); spark {
		// A Spark branch name (db.t.branch_x) is no table of its own:
		// without a grant on that name the check denies it before the
		// lookup, so a denial too may be a branch of the table it names.
		return p.branchTarget(ctx, sess, parts, err, privs...)
	}
	if rerr != nil && errors.Is(err, ErrNotFound) {
		return nil, rerr
	}
	return nil, err
}

// LoadTargetRef pins the target of a write once the caller holds each of
// privs on it (checked before the table is loaded, so a denied caller
// learns nothing about it).
func (p *Planner) LoadTargetRef(ctx context.Context, ref catalog.TableRef, privs ...authz.Privilege) (*WriteTarget, error) {
	if err := p.Authorize(ctx, authz.TableObject(ref), privs...); err != nil {
		return nil, err
	}
	if slices.Contains(privs, authz.Update) || slices.Contains(privs, authz.Delete) {
		if err := p.RefuseRestrictedWrite(ctx, ref, "UPDATE and DELETE"); err != nil {
			return nil, err
		}
	}
	mt, err := p.Mount(ref.Catalog)
	if err != nil {
		return nil, err
	}
	pinned, err := p.opts.Mounts.LoadTable(ctx, ref)
	if err != nil {
		if errors.Is(err, catalog.ErrTableNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return nil, err
	}
	return &WriteTarget{Ref: ref, mount: mt, Pinned: pinned}, nil
}

// InsertBinding is how the rows of an INSERT's query become rows of its
// target table in each write fragment (the fields of wire.Write of the
// same names).
type InsertBinding struct {
	// Project is the select list over the query's columns (__q.__c0, …)
	// that casts them to the table's columns, in table order; a column
	// the INSERT does not name is a typed NULL.
	Project string
	// InputColumns is the number of columns the query returns.
	InputColumns int
	// OrderBy is the order the fragments write in (PartitionOrder).
	OrderBy string
}

// BindInsert binds the query of INSERT INTO tgt [(cols)] query as a query
// of sess and checks its columns against the table's: their count, the
// named columns, a value for every NOT NULL column, and an implicit cast
// from each query column to its table column. Errors wrap ErrInvalid
// (or the binding's sentinels).
func (p *Planner) BindInsert(ctx context.Context, sess Session, tgt *WriteTarget, cols []string, query *parse.Statement) (*InsertBinding, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	b, err := p.bind(ctx, conn, sess, query, true)
	if err != nil {
		return nil, err
	}
	schema := tgt.Pinned.Table.Schema()
	fields := schema.Fields()
	nsrc := b.schema.NumFields()
	srcOf := make([]int, len(fields))
	if len(cols) == 0 {
		if nsrc != len(fields) {
			return nil, fmt.Errorf("%w: table %s has %d columns but the query returns %d", ErrInvalid, tgt.Ref, len(fields), nsrc)
		}
		for i := range srcOf {
			srcOf[i] = i
		}
	} else {
		if nsrc != len(cols) {
			return nil, fmt.Errorf("%w: INSERT names %d columns but the query returns %d", ErrInvalid, len(cols), nsrc)
		}
		for i := range srcOf {
			srcOf[i] = -1
		}
		for j, c := range cols {
			idx := -1
			for i, f := range fields {
				if strings.EqualFold(f.Name, c) {
					idx = i
					break
				}
			}
			if idx < 0 {
				return nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, c)
			}
			if srcOf[idx] >= 0 {
				return nil, fmt.Errorf("%w: column %q is named twice", ErrInvalid, c)
			}
			srcOf[idx] = j
		}
		for i, f := range fields {
			if srcOf[i] < 0 && f.Required {
				return nil, fmt.Errorf("%w: column %q is NOT NULL and the INSERT gives it no value", ErrInvalid, f.Name)
			}
		}
	}
	duckTypes := make([]string, len(fields))
	for i, f := range fields {
		if duckTypes[i], err = DuckTypeOf(f.Type); err != nil {
			return nil, fmt.Errorf("insert into %s: column %q: %w", tgt.Ref, f.Name, err)
		}
	}
	if err := checkImplicitCasts(ctx, conn, b, fields, srcOf, duckTypes); err != nil {
		return nil, err
	}
	project := make([]string, len(fields))
	for i, f := range fields {
		if srcOf[i] < 0 {
			project[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", duckTypes[i], engine.Quote(f.Name))
		} else {
			project[i] = fmt.Sprintf("CAST(__q.__c%d AS %s) AS %s", srcOf[i], duckTypes[i], engine.Quote(f.Name))
		}
	}
	return &InsertBinding{Project: strings.Join(project, ", "), InputColumns: nsrc, OrderBy: PartitionOrder(tgt.Pinned.Table)}, nil
}

// checkImplicitCasts refuses a source column whose DuckDB type does not
// cast implicitly to the target column's type, naming the column. conn
// holds b's stand-ins.
func checkImplicitCasts(ctx context.Context, conn *engine.Conn, b *bound, fields []iceberg.NestedField, srcOf []int, duckTypes []string) error {
	aliases := make([]string, b.schema.NumFields())
	for i := range aliases {
		aliases[i] = fmt.Sprintf("__c%d", i)
	}
	var sel []string
	var which []int
	for i := range fields {
		if srcOf[i] < 0 {
			continue
		}
		sel = append(sel, fmt.Sprintf("can_cast_implicitly(any_value(__q.__c%d), CAST(NULL AS %s)), typeof(any_value(__q.__c%d))", srcOf[i], duckTypes[i], srcOf[i]))
		which = append(which, i)
	}
	if len(sel) == 0 {
		return nil
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM (" + b.sql + ") AS __q(" + strings.Join(aliases, ", ") + ")"
	vals := make([]any, 2*len(which))
	oks := make([]bool, len(which))
	typs := make([]string, len(which))
	for k := range which {
		vals[2*k], vals[2*k+1] = &oks[k], &typs[k]
	}
	if err := conn.DB().QueryRowContext(ctx, q).Scan(vals...); err != nil {
		return bindError(err, b)
	}
	for k, i := range which {
		if !oks[k] {
			return fmt.Errorf("%w: column %q has type %s but the query gives it %s, which does not cast implicitly; add an explicit CAST", ErrInvalid, fields[i].Name, duckTypes[i], typs[k])
		}
	}
	return nil
}

// NewWrite is the write spec of a statement on tgt with a fresh UUID.
func (p *Planner) NewWrite(tgt *WriteTarget) *wire.Write {
	id := uuid.New()
	for i := 10; i < 16; i++ {
		id[i] = 0
	}
	return &wire.Write{
		Table:            tgt.Ref.Ident(),
		Display:          tgt.Ref.String(),
		MetadataLocation: tgt.Pinned.MetadataLocation,
		Props:            tgt.Pinned.StorageProps,
		WriteUUID:        id.String(),
	}
}

// FragmentUUID is the write UUID of fragment i of a statement: the
// statement's UUID with i in bytes 10–12; the worker varies bytes 13–15.
func FragmentUUID(stmt string, i int) string {
	id := uuid.MustParse(stmt)
	id[10], id[11], id[12] = byte(i>>16), byte(i>>8), byte(i)
	return id.String()
}

// resultSchemaBytes is a non-empty schema for tickets built here (the
// worker requires one; write fragments answer their own schema).
func resultSchemaBytes(s *arrow.Schema) []byte {
	return flight.SerializeSchema(s, ddlAlloc)
}

// PartitionOrder is the ORDER BY list of a write into tbl: its partition
// source columns in spec order, so that a fragment's batches each hold few
// partitions, then its sort order; empty when it has neither.
func PartitionOrder(tbl *table.Table) string {
	cols := partitionKeys(tbl)
	return strings.Join(append(cols, sortKeys(tbl, cols)...), ", ")
}

// partitionKeys are the quoted partition source columns of tbl's spec.
func partitionKeys(tbl *table.Table) []string {
	spec := tbl.Spec()
	schema := tbl.Schema()
	var cols []string
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.VoidTransform); ok {
			continue
		}
		name, ok := schema.FindColumnName(pf.SourceID())
		if !ok || strings.Contains(name, ".") {
			continue
		}
		q := engine.Quote(name)
		if !slices.Contains(cols, q) {
			cols = append(cols, q)
		}
	}
	return cols
}

// sortKeys are the ORDER BY keys of tbl's sort order (identity fields, up
// to the first other one), leaving out the columns in seen, so files come
// out sorted within each partition.
func sortKeys(tbl *table.Table, seen []string) []string {
	schema := tbl.Schema()
	seen = slices.Clone(seen)
	var keys []string
	for _, sf := range tbl.SortOrder().Fields() {
		if _, ok := sf.Transform.(iceberg.IdentityTransform); !ok {
			break
		}
		name, ok := schema.FindColumnName(sf.SourceID())
		if !ok || strings.Contains(name, ".") {
			break
		}
		q := engine.Quote(name)
		if slices.Contains(seen, q) {
			continue
		}
		seen = append(seen, q)
		dir := " ASC"
		if sf.Direction == table.SortDESC {
			dir = " DESC"
		}
		nulls := " NULLS LAST"
		if sf.NullOrder == table.NullsFirst {
			nulls = " NULLS FIRST"
		}
		keys = append(keys, q+dir+nulls)
	}
	return keys
}
