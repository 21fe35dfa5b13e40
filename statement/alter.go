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
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/internal/tablecrypt"
	"github.com/icefloe/icefloe/planner"
)

// alterTable runs ALTER TABLE: schema evolution, properties, partition
// spec evolution, identifier fields and branches and tags (refs.go), each
// as one metadata commit, and RENAME TO (grammar in docs/sql.md).
func (e *Executor) alterTable(ctx context.Context, sess planner.Session, ps *planner.Parser) error {
	ps.Pos = 1
	if !ps.Accept("TABLE") {
		return fmt.Errorf("%w: ALTER %s", planner.ErrUnsupported, ps.Kind())
	}
	ifExists := ps.Accept("IF", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return err
	}
	// Every form, identifier fields and branch and tag DDL included, asks
	// ALTER on the table (docs/security.md).
	identifiers, refs := identifierStatement(ps), refStatement(ps)
	tgt, err := e.LoadTarget(ctx, sess, parts, authz.Alter)
	if err != nil {
		if ifExists && errors.Is(err, planner.ErrNotFound) {
			return nil
		}
		return err
	}
	if identifiers {
		return e.alterIdentifierFields(ctx, tgt, ps)
	}
	if refs {
		return e.alterRefs(ctx, tgt, ps)
	}
	if ps.Accept("RENAME", "TO") {
		to, err := ps.Name(3)
		if err != nil {
			return err
		}
		if err := ps.End(); err != nil {
			return err
		}
		dst, err := planner.TableName(planner.Session{Catalog: tgt.Ref.Catalog, Schema: tgt.Ref.Schema}, to)
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
	change, err := e.alterAction(ctx, tgt, ps)
	if err != nil {
		return err
	}
	if change == nil {
		return nil
	}
	err = e.commitChange(ctx, tgt, nil, change, nil)
	if err != nil && !errors.Is(err, planner.ErrConflict) && !errors.Is(err, planner.ErrCommitUnknown) && !errors.Is(err, planner.ErrInvalid) {
		return fmt.Errorf("%w: alter table %s: %v", planner.ErrInvalid, tgt.Ref, err)
	}
	return err
}

// alterAction parses one ALTER TABLE action into a change of the
// transaction; nil means nothing to do (IF [NOT] EXISTS).
func (e *Executor) alterAction(ctx context.Context, tgt *planner.WriteTarget, ps *planner.Parser) (func(*table.Transaction) error, error) {
	schema := tgt.Pinned.Table.Schema()
	find := func(name string) (iceberg.NestedField, bool) {
		if f, ok := schema.FindFieldByName(name); ok {
			return f, true
		}
		return schema.FindFieldByNameCaseInsensitive(name)
	}
	schemaChange := func(fn func(u *table.UpdateSchema)) func(*table.Transaction) error {
		return func(tx *table.Transaction) error {
			u := tx.UpdateSchema(true, false)
			fn(u)
			if err := u.Commit(); err != nil {
				return fmt.Errorf("%w: %v", planner.ErrInvalid, err)
			}
			return nil
		}
	}
	specChange := func(fn func(u *table.UpdateSpec)) func(*table.Transaction) error {
		return func(tx *table.Transaction) error {
			u := tx.UpdateSpec(true)
			fn(u)
			if err := u.Commit(); err != nil {
				return fmt.Errorf("%w: %v", planner.ErrInvalid, err)
			}
			return nil
		}
	}
	switch {
	case ps.Accept("ADD", "PARTITION", "FIELD"), ps.Accept("ADD", "PARTITION", "KEY"):
		it, err := ps.PartitionItem()
		if err != nil {
			return nil, err
		}
		tr, suffix, err := it.Transform()
		if err != nil {
			return nil, err
		}
		f, ok := find(it.Column())
		if !ok {
			return nil, fmt.Errorf("%w: partition column %q is not a column of %s", planner.ErrInvalid, it.Column(), tgt.Ref)
		}
		added := iceberg.PartitionField{SourceIDs: []int{f.ID}, Name: f.Name + suffix, Transform: tr}
		spec := tgt.Pinned.Table.Spec()
		if err := planner.CheckDecimalPartitions(&spec, &added, schema); err != nil {
			return nil, err
		}
		return specChange(func(u *table.UpdateSpec) { u.AddField(f.Name, tr, f.Name+suffix) }), nil
	case ps.Accept("DROP", "PARTITION", "FIELD"), ps.Accept("DROP", "PARTITION", "KEY"):
		name := ""
		if ps.Pos+1 < len(ps.Tokens()) && ps.Tokens()[ps.Pos+1].IsOp("(") {
			it, err := ps.PartitionItem()
			if err != nil {
				return nil, err
			}
			_, suffix, err := it.Transform()
			if err != nil {
				return nil, err
			}
			f, ok := find(it.Column())
			if !ok {
				return nil, fmt.Errorf("%w: partition column %q is not a column of %s", planner.ErrInvalid, it.Column(), tgt.Ref)
			}
			name = f.Name + suffix
		} else {
			var err error
			if name, err = ps.Ident(); err != nil {
				return nil, err
			}
			if err := ps.End(); err != nil {
				return nil, err
			}
		}
		return specChange(func(u *table.UpdateSpec) { u.RemoveField(name) }), nil
	case ps.Accept("ADD"):
		ps.Accept("COLUMN")
		ifNotExists := ps.Accept("IF", "NOT", "EXISTS")
		if ps.Pos >= len(ps.Tokens()) {
			return nil, ps.Unexpected()
		}
		if !sqltok.Balanced(ps.Tokens()[ps.Pos:]) {
			return nil, fmt.Errorf("%w: unbalanced parentheses in the column definition", planner.ErrSyntax)
		}
		name := ps.Tokens()[ps.Pos].Value
		def := ps.Text(ps.Pos, len(ps.Tokens())-1)
		ps.Pos = len(ps.Tokens())
		if _, ok := find(name); ok {
			if ifNotExists {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: column %q of %s", planner.ErrExists, name, tgt.Ref)
		}
		added, err := e.ParseColumns(ctx, "__icefloe_add", "("+def+")")
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
	case ps.Accept("DROP"):
		ps.Accept("COLUMN")
		ifExists := ps.Accept("IF", "EXISTS")
		name, err := ps.Ident()
		if err != nil {
			return nil, err
		}
		if err := ps.End(); err != nil {
			return nil, err
		}
		f, ok := find(name)
		if !ok {
			if ifExists {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, name)
		}
		spec := tgt.Pinned.Table.Spec()
		if pfs := spec.FieldsBySourceID(f.ID); len(pfs) > 0 {
			return nil, fmt.Errorf("%w: column %q is a source of the partition spec; drop partition field %s first", planner.ErrInvalid, f.Name, pfs[0].Name)
		}
		return schemaChange(func(u *table.UpdateSchema) { u.DeleteColumn([]string{f.Name}) }), nil
	case ps.Accept("RENAME"):
		ps.Accept("COLUMN")
		from, err := ps.Ident()
		if err != nil {
			return nil, err
		}
		if !ps.Accept("TO") {
			return nil, ps.Unexpected()
		}
		to, err := ps.Ident()
		if err != nil {
			return nil, err
		}
		if err := ps.End(); err != nil {
			return nil, err
		}
		f, ok := find(from)
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, from)
		}
		if _, ok := find(to); ok && !strings.EqualFold(from, to) {
			return nil, fmt.Errorf("%w: column %q of %s", planner.ErrExists, to, tgt.Ref)
		}
		return schemaChange(func(u *table.UpdateSchema) { u.RenameColumn([]string{f.Name}, to) }), nil
	case ps.Accept("ALTER"):
		ps.Accept("COLUMN")
		name, err := ps.Ident()
		if err != nil {
			return nil, err
		}
		f, ok := find(name)
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %q", planner.ErrInvalid, tgt.Ref, name)
		}
		if ps.Accept("DROP", "NOT", "NULL") {
			if err := ps.End(); err != nil {
				return nil, err
			}
			return schemaChange(func(u *table.UpdateSchema) {
				u.UpdateColumn([]string{f.Name}, table.ColumnUpdate{Required: iceberg.Optional[bool]{Val: false, Valid: true}})
			}), nil
		}
		if ps.Accept("SET", "NOT", "NULL") {
			return nil, fmt.Errorf("%w: SET NOT NULL: existing rows may hold NULLs", planner.ErrUnsupported)
		}
		if !ps.Accept("SET", "DATA", "TYPE") && !ps.Accept("TYPE") {
			return nil, ps.Unexpected()
		}
		if ps.Pos >= len(ps.Tokens()) {
			return nil, ps.Unexpected()
		}
		if !sqltok.Balanced(ps.Tokens()[ps.Pos:]) {
			return nil, fmt.Errorf("%w: unbalanced parentheses in the type", planner.ErrSyntax)
		}
		typText := ps.Text(ps.Pos, len(ps.Tokens())-1)
		ps.Pos = len(ps.Tokens())
		s, err := e.ParseColumns(ctx, "__icefloe_alter", "("+engine.Quote(f.Name)+" "+typText+")")
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
	case ps.Accept("SET"):
		ps.Accept("TBLPROPERTIES")
		ps.Accept("PROPERTIES")
		props := iceberg.Properties{}
		if err := ps.Properties(props); err != nil {
			return nil, err
		}
		if err := ps.End(); err != nil {
			return nil, err
		}
		if err := planner.CheckPlacement(tgt.Mount(), props); err != nil {
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
	case ps.Accept("UNSET"):
		ps.Accept("TBLPROPERTIES")
		ps.Accept("PROPERTIES")
		if !ps.AcceptPunct("(") {
			return nil, ps.Unexpected()
		}
		var keys []string
		for {
			if ps.Pos < len(ps.Tokens()) && ps.Tokens()[ps.Pos].Kind == sqltok.String {
				keys = append(keys, ps.Tokens()[ps.Pos].Value)
				ps.Pos++
			} else {
				var b strings.Builder
				for {
					w, err := ps.Ident()
					if err != nil {
						return nil, err
					}
					b.WriteString(w)
					if !ps.AtPunct(".") && !ps.AtPunct("-") {
						break
					}
					b.WriteString(ps.Tokens()[ps.Pos].Value)
					ps.Pos++
				}
				keys = append(keys, b.String())
			}
			if ps.AcceptPunct(")") {
				break
			}
			if !ps.AcceptPunct(",") {
				return nil, ps.Unexpected()
			}
		}
		if err := ps.End(); err != nil {
			return nil, err
		}
		if err := fixedEncryption(keys); err != nil {
			return nil, err
		}
		return func(tx *table.Transaction) error { return tx.RemoveProperties(keys) }, nil
	}
	return nil, ps.Unexpected()
}

// identifierStatement reports whether the ALTER TABLE action at ps sets
// or drops the identifier fields.
func identifierStatement(ps *planner.Parser) bool {
	return ps.At("SET", "IDENTIFIER", "FIELDS") || ps.At("DROP", "IDENTIFIER", "FIELDS")
}

// alterIdentifierFields runs SET IDENTIFIER FIELDS a, b and DROP
// IDENTIFIER FIELDS [a, b] (dropping the named ones, or all).
func (e *Executor) alterIdentifierFields(ctx context.Context, tgt *planner.WriteTarget, ps *planner.Parser) error {
	set := ps.Accept("SET", "IDENTIFIER", "FIELDS")
	if !set && !ps.Accept("DROP", "IDENTIFIER", "FIELDS") {
		return ps.Unexpected()
	}
	var names []string
	for ps.Pos < len(ps.Tokens()) {
		n, err := ps.Name(16)
		if err != nil {
			return err
		}
		names = append(names, strings.Join(n, "."))
		if !ps.AcceptPunct(",") {
			break
		}
	}
	if err := ps.End(); err != nil {
		return err
	}
	if set && len(names) == 0 {
		return ps.Unexpected()
	}
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
