package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// ddlAlter runs ALTER TABLE: schema evolution, properties and partition
// spec evolution, each as one metadata commit (grammar in docs/sql.md).
func (p *Planner) ddlAlter(ctx context.Context, sess Session, ps *Parser) error {
	ps.Pos = 1
	if !ps.Accept("TABLE") {
		return fmt.Errorf("%w: ALTER %s", ErrUnsupported, ps.kind())
	}
	ifExists := ps.Accept("IF", "EXISTS")
	parts, err := ps.Name(3)
	if err != nil {
		return err
	}
	tgt, err := p.LoadTarget(ctx, sess, parts, authz.Alter)
	if err != nil {
		if ifExists && errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if ps.Accept("RENAME", "TO") {
		to, err := ps.Name(3)
		if err != nil {
			return err
		}
		if err := ps.End(); err != nil {
			return err
		}
		dst, err := TableName(Session{Catalog: tgt.Ref.Catalog, Schema: tgt.Ref.Schema}, to)
		if err != nil {
			return err
		}
		if dst.Catalog != tgt.Ref.Catalog {
			return fmt.Errorf("%w: a table cannot move to another catalog", ErrInvalid)
		}
		if _, err := tgt.mount.Catalog.RenameTable(ctx, tgt.Ref.Ident(), dst.Ident()); err != nil {
			if errors.Is(err, icecat.ErrTableAlreadyExists) {
				return fmt.Errorf("%w: table %s", ErrExists, dst)
			}
			return fmt.Errorf("rename %s: %w", tgt.Ref, err)
		}
		return nil
	}
	change, err := p.alterAction(ctx, tgt, ps)
	if err != nil {
		return err
	}
	if change == nil {
		return nil
	}
	err = p.Commit(ctx, tgt, change, nil)
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrCommitUnknown) && !errors.Is(err, ErrInvalid) {
		return fmt.Errorf("%w: alter table %s: %v", ErrInvalid, tgt.Ref, err)
	}
	return err
}

// alterAction parses one ALTER TABLE action into a change of the
// transaction; nil means nothing to do (IF [NOT] EXISTS).
func (p *Planner) alterAction(ctx context.Context, tgt *WriteTarget, ps *Parser) (func(*table.Transaction) error, error) {
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
				return fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return nil
		}
	}
	specChange := func(fn func(u *table.UpdateSpec)) func(*table.Transaction) error {
		return func(tx *table.Transaction) error {
			u := tx.UpdateSpec(true)
			fn(u)
			if err := u.Commit(); err != nil {
				return fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return nil
		}
	}
	switch {
	case ps.Accept("ADD", "PARTITION", "FIELD"), ps.Accept("ADD", "PARTITION", "KEY"):
		it, err := ps.singlePartItem()
		if err != nil {
			return nil, err
		}
		tr, suffix, err := ddlTransform(it)
		if err != nil {
			return nil, err
		}
		f, ok := find(it.column)
		if !ok {
			return nil, fmt.Errorf("%w: partition column %q is not a column of %s", ErrInvalid, it.column, tgt.Ref)
		}
		added := iceberg.PartitionField{SourceIDs: []int{f.ID}, Name: f.Name + suffix, Transform: tr}
		spec := tgt.Pinned.Table.Spec()
		if err := ddlDecimalFields(&spec, &added, schema); err != nil {
			return nil, err
		}
		return specChange(func(u *table.UpdateSpec) { u.AddField(f.Name, tr, f.Name+suffix) }), nil
	case ps.Accept("DROP", "PARTITION", "FIELD"), ps.Accept("DROP", "PARTITION", "KEY"):
		name := ""
		if ps.Pos+1 < len(ps.toks) && ps.toks[ps.Pos+1].IsOp("(") {
			it, err := ps.singlePartItem()
			if err != nil {
				return nil, err
			}
			_, suffix, err := ddlTransform(it)
			if err != nil {
				return nil, err
			}
			f, ok := find(it.column)
			if !ok {
				return nil, fmt.Errorf("%w: partition column %q is not a column of %s", ErrInvalid, it.column, tgt.Ref)
			}
			name = f.Name + suffix
		} else {
			var err error
			if name, err = ps.ident(); err != nil {
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
		if ps.Pos >= len(ps.toks) {
			return nil, ps.unexpected()
		}
		if !balanced(ps.toks[ps.Pos:]) {
			return nil, ddlSyntaxf("unbalanced parentheses in the column definition")
		}
		name := ps.toks[ps.Pos].Value
		def := ps.text(ps.Pos, len(ps.toks)-1)
		ps.Pos = len(ps.toks)
		if _, ok := find(name); ok {
			if ifNotExists {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: column %q of %s", ErrExists, name, tgt.Ref)
		}
		added, err := p.ddlColumns(ctx, "__icefloe_add", "("+def+")")
		if err != nil {
			return nil, err
		}
		if len(added.Fields()) != 1 {
			return nil, fmt.Errorf("%w: ADD COLUMN adds one column", ErrInvalid)
		}
		f := added.Fields()[0]
		if f.Required {
			return nil, fmt.Errorf("%w: an added column cannot be NOT NULL: the table's existing rows have no value for %q", ErrInvalid, f.Name)
		}
		return schemaChange(func(u *table.UpdateSchema) { u.AddColumn([]string{f.Name}, f.Type, "", false, nil) }), nil
	case ps.Accept("DROP"):
		ps.Accept("COLUMN")
		ifExists := ps.Accept("IF", "EXISTS")
		name, err := ps.ident()
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
			return nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, name)
		}
		spec := tgt.Pinned.Table.Spec()
		if pfs := spec.FieldsBySourceID(f.ID); len(pfs) > 0 {
			return nil, fmt.Errorf("%w: column %q is a source of the partition spec; drop partition field %s first", ErrInvalid, f.Name, pfs[0].Name)
		}
		return schemaChange(func(u *table.UpdateSchema) { u.DeleteColumn([]string{f.Name}) }), nil
	case ps.Accept("RENAME"):
		ps.Accept("COLUMN")
		from, err := ps.ident()
		if err != nil {
			return nil, err
		}
		if !ps.Accept("TO") {
			return nil, ps.unexpected()
		}
		to, err := ps.ident()
		if err != nil {
			return nil, err
		}
		if err := ps.End(); err != nil {
			return nil, err
		}
		f, ok := find(from)
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, from)
		}
		if _, ok := find(to); ok && !strings.EqualFold(from, to) {
			return nil, fmt.Errorf("%w: column %q of %s", ErrExists, to, tgt.Ref)
		}
		return schemaChange(func(u *table.UpdateSchema) { u.RenameColumn([]string{f.Name}, to) }), nil
	case ps.Accept("ALTER"):
		ps.Accept("COLUMN")
		name, err := ps.ident()
		if err != nil {
			return nil, err
		}
		f, ok := find(name)
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %q", ErrInvalid, tgt.Ref, name)
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
			return nil, fmt.Errorf("%w: SET NOT NULL: existing rows may hold NULLs", ErrUnsupported)
		}
		if !ps.Accept("SET", "DATA", "TYPE") && !ps.Accept("TYPE") {
			return nil, ps.unexpected()
		}
		if ps.Pos >= len(ps.toks) {
			return nil, ps.unexpected()
		}
		if !balanced(ps.toks[ps.Pos:]) {
			return nil, ddlSyntaxf("unbalanced parentheses in the type")
		}
		typText := ps.text(ps.Pos, len(ps.toks)-1)
		ps.Pos = len(ps.toks)
		s, err := p.ddlColumns(ctx, "__icefloe_alter", "("+engine.Quote(f.Name)+" "+typText+")")
		if err != nil {
			return nil, err
		}
		if len(s.Fields()) != 1 {
			return nil, fmt.Errorf("%w: ALTER COLUMN … TYPE takes one type", ErrInvalid)
		}
		typ := s.Fields()[0].Type
		if typ.Equals(f.Type) {
			return nil, nil
		}
		if _, err := iceberg.PromoteType(f.Type, typ); err != nil {
			return nil, fmt.Errorf("%w: column %q cannot change from %s to %s: only widenings are allowed (int→long, float→double, decimal(P,S)→decimal(P',S) with P'>P)", ErrInvalid, f.Name, f.Type, typ)
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
		if err := CheckPlacement(tgt.mount, props); err != nil {
			return nil, err
		}
		if _, ok := props[catalog.LocationKey]; ok {
			return nil, fmt.Errorf("%w: a table's location cannot change; location is not a table property", ErrUnsupported)
		}
		if err := fixedEncryption(props); err != nil {
			return nil, err
		}
		return func(tx *table.Transaction) error { return tx.SetProperties(props) }, nil
	case ps.Accept("UNSET"):
		ps.Accept("TBLPROPERTIES")
		ps.Accept("PROPERTIES")
		if !ps.acceptPunct("(") {
			return nil, ps.unexpected()
		}
		var keys []string
		for {
			if ps.Pos < len(ps.toks) && ps.toks[ps.Pos].Kind == sqltok.String {
				keys = append(keys, ps.toks[ps.Pos].Value)
				ps.Pos++
			} else {
				var b strings.Builder
				for {
					w, err := ps.ident()
					if err != nil {
						return nil, err
					}
					b.WriteString(w)
					if !ps.atPunct(".") && !ps.atPunct("-") {
						break
					}
					b.WriteString(ps.toks[ps.Pos].Value)
					ps.Pos++
				}
				keys = append(keys, b.String())
			}
			if ps.acceptPunct(")") {
				break
			}
			if !ps.acceptPunct(",") {
				return nil, ps.unexpected()
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
	return nil, ps.unexpected()
}

// singlePartItem reads one PARTITIONED BY item to the end of the statement.
func (p *Parser) singlePartItem() (ddlPartItem, error) {
	toks := append([]sqltok.Token{{Kind: sqltok.Op, Value: "("}}, p.toks[p.Pos:]...)
	toks = append(toks, sqltok.Token{Kind: sqltok.Op, Value: ")"})
	sub := &Parser{src: p.src, toks: toks}
	items, err := sub.partitionItems()
	if err != nil {
		return ddlPartItem{}, err
	}
	if len(items) != 1 || sub.Pos != len(sub.toks) {
		return ddlPartItem{}, ddlSyntaxf("one partition field at a time")
	}
	p.Pos = len(p.toks)
	return items[0], nil
}
