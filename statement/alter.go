package statement

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

func init() { runs(parse.KindAlterTable, (*Executor).alterTable) }

// alterTable runs ALTER TABLE: it loads the table and applies the
// statement's one typed action (parse.AlterAction): schema evolution,
// properties, partition spec evolution and identifier fields, each as one
// metadata commit; branches and tags (refs.go); RENAME TO; EXECUTE
// (maintenance.go). Grammar in docs/sql.md.
func (e *Executor) alterTable(ctx context.Context, sess planner.Session, a *parse.AlterTable) (int64, error) {
	// Every form, identifier fields and branch and tag DDL included, asks
	// ALTER on the table (docs/security.md).
	tgt, err := e.planner.LoadTarget(ctx, sess, a.Name, authz.Alter)
	if err != nil {
		if a.IfExists && errors.Is(err, planner.ErrNotFound) {
			return 0, nil
		}
		return 0, err
	}
	switch x := a.Action.(type) {
	case *parse.Execute:
		return e.alterExecute(ctx, sess, tgt, x)
	case *parse.RenameTable:
		return 0, renameTable(ctx, tgt, x)
	case *parse.SetIdentifierFields:
		return 0, e.alterIdentifierFields(ctx, tgt, x.Columns, true)
	case *parse.DropIdentifierFields:
		return 0, e.alterIdentifierFields(ctx, tgt, x.Columns, false)
	case *parse.RefChange:
		return 0, e.alterRefs(ctx, tgt, x)
	}
	change, err := e.alterChange(ctx, tgt, a.Action)
	if err != nil || change == nil {
		return 0, err
	}
	err = e.commitChange(ctx, tgt, nil, change, nil)
	if err != nil && !errors.Is(err, planner.ErrConflict) && !errors.Is(err, planner.ErrCommitUnknown) && !errors.Is(err, planner.ErrInvalid) {
		return 0, fmt.Errorf("%w: alter table %s: %v", planner.ErrInvalid, tgt.Ref, err)
	}
	return 0, err
}

// txChange is one ALTER TABLE action as a change of the commit's
// transaction; a nil change means nothing to do (IF [NOT] EXISTS).
type txChange = func(*table.Transaction) error

// alterChange applies a schema, partition spec or property action to the
// table as loaded: a change of the transaction, checked against it.
func (e *Executor) alterChange(ctx context.Context, tgt *planner.WriteTarget, action parse.AlterAction) (txChange, error) {
	switch x := action.(type) {
	case *parse.AddPartitionField:
		return addPartitionField(tgt, x)
	case *parse.DropPartitionField:
		return dropPartitionField(tgt, x)
	case *parse.AddColumn:
		return e.addColumn(ctx, tgt, x)
	case *parse.DropColumn:
		return dropColumn(tgt, x)
	case *parse.RenameColumn:
		return renameColumn(tgt, x)
	case *parse.SetColumnType:
		return e.setColumnType(ctx, tgt, x)
	case *parse.DropNotNull:
		return dropNotNull(tgt, x)
	case *parse.SetNotNull:
		if _, err := findColumn(tgt, x.Column); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: SET NOT NULL: existing rows may hold NULLs", planner.ErrUnsupported)
	case *parse.SetProperties:
		return e.setProperties(ctx, tgt, x)
	case *parse.UnsetProperties:
		return unsetProperties(x)
	}
	return nil, fmt.Errorf("%w: ALTER TABLE action %T", planner.ErrUnsupported, action)
}

// lookupColumn finds a top-level or nested column of the table by name,
// as written or else but for case.
func lookupColumn(tgt *planner.WriteTarget, name string) (iceberg.NestedField, bool) {
	schema := tgt.Pinned.Table.Schema()
	if f, ok := schema.FindFieldByName(name); ok {
		return f, true
	}
	return schema.FindFieldByNameCaseInsensitive(name)
}

// findColumn is lookupColumn, failing when there is no such column.
func findColumn(tgt *planner.WriteTarget, name string) (iceberg.NestedField, error) {
	f, ok := lookupColumn(tgt, name)
	if !ok {
		return f, fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, name)
	}
	return f, nil
}

// schemaChange and specChange make a change that evolves the schema or
// the partition spec with fn.
func schemaChange(fn func(u *table.UpdateSchema)) txChange {
	return evolve(func(tx *table.Transaction) *table.UpdateSchema { return tx.UpdateSchema(true, false) }, fn)
}

func specChange(fn func(u *table.UpdateSpec)) txChange {
	return evolve(func(tx *table.Transaction) *table.UpdateSpec { return tx.UpdateSpec(true) }, fn)
}

// evolve makes the change that starts an update of the transaction,
// applies fn to it and commits it; a refused update is ErrInvalid.
func evolve[U interface{ Commit() error }](start func(*table.Transaction) U, fn func(U)) txChange {
	return func(tx *table.Transaction) error {
		u := start(tx)
		fn(u)
		if err := u.Commit(); err != nil {
			return fmt.Errorf("%w: %v", planner.ErrInvalid, err)
		}
		return nil
	}
}

// partitionField is the table's field and the partition field's
// transform and name suffix of a partition item.
func partitionField(tgt *planner.WriteTarget, it parse.PartitionItem) (iceberg.NestedField, iceberg.Transform, string, error) {
	tr, suffix, err := planner.PartitionTransform(it)
	if err != nil {
		return iceberg.NestedField{}, nil, "", err
	}
	f, ok := lookupColumn(tgt, it.Column)
	if !ok {
		return f, nil, "", fmt.Errorf("%w: partition column %q is not a column of %s", planner.ErrInvalid, it.Column, tgt.Ref)
	}
	return f, tr, suffix, nil
}

func addPartitionField(tgt *planner.WriteTarget, x *parse.AddPartitionField) (txChange, error) {
	f, tr, suffix, err := partitionField(tgt, x.Item)
	if err != nil {
		return nil, err
	}
	added := iceberg.PartitionField{SourceIDs: []int{f.ID}, Name: f.Name + suffix, Transform: tr}
	spec := tgt.Pinned.Table.Spec()
	if err := planner.CheckDecimalPartitions(&spec, &added, tgt.Pinned.Table.Schema()); err != nil {
		return nil, err
	}
	return specChange(func(u *table.UpdateSpec) { u.AddField(f.Name, tr, f.Name+suffix) }), nil
}

func dropPartitionField(tgt *planner.WriteTarget, x *parse.DropPartitionField) (txChange, error) {
	name := x.Name
	if x.Item != nil {
		f, _, suffix, err := partitionField(tgt, *x.Item)
		if err != nil {
			return nil, err
		}
		name = f.Name + suffix
	}
	return specChange(func(u *table.UpdateSpec) { u.RemoveField(name) }), nil
}

func (e *Executor) addColumn(ctx context.Context, tgt *planner.WriteTarget, x *parse.AddColumn) (txChange, error) {
	if _, ok := lookupColumn(tgt, x.Column); ok {
		if x.IfNotExists {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: column %q of %s", planner.ErrExists, x.Column, tgt.Ref)
	}
	added, err := e.planner.ParseColumns(ctx, "__icefloe_add", "("+x.Def+")")
	if err != nil {
		return nil, err
	}
	if len(added.Fields()) != 1 {
		return nil, fmt.Errorf("%w: ADD COLUMN adds one column", planner.ErrInvalid)
	}
	f := added.Fields()[0]
	if f.Required {
		return nil, fmt.Errorf("%w: an added column cannot be NOT NULL: the table's existing rows have no value for %q", planner.ErrInvalid, f.Name)
	}
	return schemaChange(func(u *table.UpdateSchema) { u.AddColumn([]string{f.Name}, f.Type, "", false, nil) }), nil
}

func dropColumn(tgt *planner.WriteTarget, x *parse.DropColumn) (txChange, error) {
	f, ok := lookupColumn(tgt, x.Column)
	if !ok {
		if x.IfExists {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, x.Column)
	}
	spec := tgt.Pinned.Table.Spec()
	if pfs := spec.FieldsBySourceID(f.ID); len(pfs) > 0 {
		return nil, fmt.Errorf("%w: column %q is a source of the partition spec; drop partition field %s first", planner.ErrInvalid, f.Name, pfs[0].Name)
	}
	return schemaChange(func(u *table.UpdateSchema) { u.DeleteColumn([]string{f.Name}) }), nil
}

func renameColumn(tgt *planner.WriteTarget, x *parse.RenameColumn) (txChange, error) {
	f, err := findColumn(tgt, x.From)
	if err != nil {
		return nil, err
	}
	if _, ok := lookupColumn(tgt, x.To); ok && !strings.EqualFold(x.From, x.To) {
		return nil, fmt.Errorf("%w: column %q of %s", planner.ErrExists, x.To, tgt.Ref)
	}
	return schemaChange(func(u *table.UpdateSchema) { u.RenameColumn([]string{f.Name}, x.To) }), nil
}

func dropNotNull(tgt *planner.WriteTarget, x *parse.DropNotNull) (txChange, error) {
	f, err := findColumn(tgt, x.Column)
	if err != nil {
		return nil, err
	}
	return schemaChange(func(u *table.UpdateSchema) {
		u.UpdateColumn([]string{f.Name}, table.ColumnUpdate{Required: iceberg.Optional[bool]{Val: false, Valid: true}})
	}), nil
}

// setColumnType widens a column's type (Iceberg's promotions only).
func (e *Executor) setColumnType(ctx context.Context, tgt *planner.WriteTarget, x *parse.SetColumnType) (txChange, error) {
	f, err := findColumn(tgt, x.Column)
	if err != nil {
		return nil, err
	}
	s, err := e.planner.ParseColumns(ctx, "__icefloe_alter", "("+engine.Quote(f.Name)+" "+x.Type+")")
	if err != nil {
		return nil, err
	}
	if len(s.Fields()) != 1 {
		return nil, fmt.Errorf("%w: ALTER COLUMN … TYPE takes one type", planner.ErrInvalid)
	}
	typ := s.Fields()[0].Type
	if typ.Equals(f.Type) {
		return nil, nil
	}
	if _, err := iceberg.PromoteType(f.Type, typ); err != nil {
		return nil, fmt.Errorf("%w: column %q cannot change from %s to %s: only widenings are allowed (int→long, float→double, decimal(P,S)→decimal(P',S) with P'>P)", planner.ErrInvalid, f.Name, f.Type, typ)
	}
	return schemaChange(func(u *table.UpdateSchema) {
		u.UpdateColumn([]string{f.Name}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: typ, Valid: true}})
	}), nil
}

func (e *Executor) setProperties(ctx context.Context, tgt *planner.WriteTarget, x *parse.SetProperties) (txChange, error) {
	props := iceberg.Properties(x.Props)
	if err := checkPlacement(tgt.Mount(), props); err != nil {
		return nil, err
	}
	if _, ok := props[catalog.LocationKey]; ok {
		return nil, fmt.Errorf("%w: a table's location cannot change; location is not a table property", planner.ErrUnsupported)
	}
	if err := e.placeProps(ctx, tgt, props); err != nil {
		return nil, err
	}
	if err := fixedEncryption(props); err != nil {
		return nil, err
	}
	return func(tx *table.Transaction) error { return tx.SetProperties(props) }, nil
}

func unsetProperties(x *parse.UnsetProperties) (txChange, error) {
	if err := fixedEncryption(x.Keys); err != nil {
		return nil, err
	}
	return func(tx *table.Transaction) error { return tx.RemoveProperties(x.Keys) }, nil
}

// renameTable runs RENAME TO, within the table's catalog.
func renameTable(ctx context.Context, tgt *planner.WriteTarget, x *parse.RenameTable) error {
	dst, err := planner.TableName(planner.Session{Catalog: tgt.Ref.Catalog, Schema: tgt.Ref.Schema}, x.To)
	if err != nil {
		return err
	}
	if dst.Catalog != tgt.Ref.Catalog {
		return fmt.Errorf("%w: a table cannot move to another catalog", planner.ErrInvalid)
	}
	if _, err := tgt.Mount().Catalog.RenameTable(ctx, tgt.Ref.Ident(), dst.Ident()); err != nil {
		if errors.Is(err, icecat.ErrTableAlreadyExists) {
			return fmt.Errorf("%w: table %s", planner.ErrExists, dst)
		}
		return fmt.Errorf("rename %s: %w", tgt.Ref, err)
	}
	return nil
}

// alterIdentifierFields runs SET IDENTIFIER FIELDS names (set) and DROP
// IDENTIFIER FIELDS [names] (dropping the named ones, or all).
func (e *Executor) alterIdentifierFields(ctx context.Context, tgt *planner.WriteTarget, names []string, set bool) error {
	schema := tgt.Pinned.Table.Schema()
	current := map[string]bool{}
	for _, id := range schema.IdentifierFieldIDs {
		if n, ok := schema.FindColumnName(id); ok {
			current[n] = true
		}
	}
	var keep [][]string
	for _, n := range names {
		f, ok := schema.FindFieldByName(n)
		if !ok {
			return fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, n)
		}
		if !set && !slices.Contains(schema.IdentifierFieldIDs, f.ID) {
			return fmt.Errorf("%w: %q is not an identifier field of %s", planner.ErrInvalid, n, tgt.Ref)
		}
	}
	if set {
		for _, n := range names {
			keep = append(keep, strings.Split(n, "."))
		}
	} else {
		for n := range current {
			if len(names) > 0 && !slices.Contains(names, n) {
				keep = append(keep, strings.Split(n, "."))
			}
		}
	}
	err := e.commitChange(ctx, tgt, nil, func(tx *table.Transaction) error {
		return tx.UpdateSchema(true, false).SetIdentifierField(keep).Commit()
	}, nil)
	if err != nil && !errors.Is(err, planner.ErrConflict) && !errors.Is(err, planner.ErrCommitUnknown) {
		return fmt.Errorf("%w: alter table %s: %v", planner.ErrInvalid, tgt.Ref, err)
	}
	return err
}

// fixedEncryption refuses to change a table's encryption properties
// after CREATE TABLE: files written before and after would not agree.
// keys is a property map or a list of keys.
func fixedEncryption[K iceberg.Properties | []string](keys K) error {
	var names []string
	switch k := any(keys).(type) {
	case iceberg.Properties:
		names = slices.Collect(maps.Keys(k))
	case []string:
		names = k
	}
	for _, n := range names {
		if n == tablecrypt.KeyIDProp || n == tablecrypt.WrappedKeyProp {
			return fmt.Errorf("%w: %s is fixed when the table is created", planner.ErrInvalid, n)
		}
	}
	return nil
}
