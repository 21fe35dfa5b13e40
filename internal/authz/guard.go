package authz

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// Guard wraps the mounted catalogs (catalog.Mounts.SetGuard): every catalog
// change needs its privilege, listings show only what the caller may see,
// and each dropped table is reported to OnDrop.
type Guard struct {
	// Policy decides; nil allows everything (authentication is off) and
	// the guard only reports drops.
	Policy *Policy
	// OnDrop, when set, is told the UUID of each table dropped through
	// the guard, after the catalog dropped it.
	OnDrop func(ctx context.Context, ref catalog.TableRef, uuid string)
}

// Wrap returns the guarded catalog mounted under name; internal is the
// same catalog with the policy left out, for steps the planner has
// authorized as a whole (a replace's staging table), which still report
// their drops.
func (g *Guard) Wrap(name string, c icecat.Catalog) (guarded, internal icecat.Catalog) {
	return &guardedCatalog{Catalog: c, mount: name, g: g, policy: g.Policy},
		&guardedCatalog{Catalog: c, mount: name, g: g}
}

// guardedCatalog is one catalog behind the guard. The methods not written
// here (LoadTable, the existence checks, namespace properties) read
// nothing the planner has not authorized.
type guardedCatalog struct {
	icecat.Catalog
	mount  string
	g      *Guard
	policy *Policy
}

// The optional interfaces icefloe asserts on a mounted catalog.
var (
	_ icecat.PurgeableTable = (*guardedCatalog)(nil)
	_ viewCatalog           = (*guardedCatalog)(nil)
)

// viewCatalog is the part of iceberg-go's view support DROP SCHEMA …
// CASCADE uses.
type viewCatalog interface {
	ListViews(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
	DropView(ctx context.Context, identifier table.Identifier) error
}

func (c *guardedCatalog) table(ident table.Identifier) Object {
	return append(Object{c.mount}, ident...)
}

func (c *guardedCatalog) ref(ident table.Identifier) catalog.TableRef {
	ref := catalog.TableRef{Catalog: c.mount}
	if len(ident) > 0 {
		ref.Table = ident[len(ident)-1]
	}
	if len(ident) > 1 {
		ref.Schema = ident[len(ident)-2]
	}
	return ref
}

func (c *guardedCatalog) CreateTable(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, opts ...icecat.CreateTableOpt) (*table.Table, error) {
	if err := c.policy.Check(ctx, Create, c.table(ident)); err != nil {
		return nil, err
	}
	return c.Catalog.CreateTable(ctx, ident, schema, opts...)
}

// CommitTable needs some write privilege on the table. The planner checked
// the precise one (INSERT, UPDATE, DELETE or ALTER) when it planned the
// statement; this keeps a path that forgot from committing at all.
func (c *guardedCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.policy != nil {
		obj := c.table(ident)
		ok := false
		for _, p := range []Privilege{Insert, Update, Delete, Alter} {
			if c.policy.Check(ctx, p, obj) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return nil, "", c.policy.Check(ctx, Insert, obj)
		}
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

func (c *guardedCatalog) DropTable(ctx context.Context, ident table.Identifier) error {
	return c.drop(ctx, ident, c.Catalog.DropTable)
}

// PurgeTable drops the table and deletes its files where the catalog can
// (REST); otherwise it only drops, as DropTable.
func (c *guardedCatalog) PurgeTable(ctx context.Context, ident table.Identifier) error {
	if pc, ok := c.Catalog.(icecat.PurgeableTable); ok {
		return c.drop(ctx, ident, pc.PurgeTable)
	}
	return c.drop(ctx, ident, c.Catalog.DropTable)
}

// drop checks DROP, drops, and reports the dropped table's UUID.
func (c *guardedCatalog) drop(ctx context.Context, ident table.Identifier, do func(context.Context, table.Identifier) error) error {
	if err := c.policy.Check(ctx, Drop, c.table(ident)); err != nil {
		return err
	}
	var uuid string
	if c.g.OnDrop != nil {
		if tbl, err := c.Catalog.LoadTable(ctx, ident); err == nil {
			uuid = tbl.Metadata().TableUUID().String()
		}
	}
	if err := do(ctx, ident); err != nil {
		return err
	}
	if uuid != "" {
		c.g.OnDrop(ctx, c.ref(ident), uuid)
	}
	return nil
}

// RenameTable needs ALTER on the table and CREATE where it goes.
func (c *guardedCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	if err := errors.Join(c.policy.Check(ctx, Alter, c.table(from)), c.policy.Check(ctx, Create, c.table(to))); err != nil {
		return nil, err
	}
	return c.Catalog.RenameTable(ctx, from, to)
}

// ListTables lists the tables the caller may see.
func (c *guardedCatalog) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return c.visible(ctx, c.Catalog.ListTables(ctx, ns))
}

func (c *guardedCatalog) visible(ctx context.Context, seq iter.Seq2[table.Identifier, error]) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		for ident, err := range seq {
			if err == nil && !c.policy.CanSee(ctx, c.table(ident)) {
				continue
			}
			if !yield(ident, err) {
				return
			}
		}
	}
}

// ListNamespaces lists the schemas the caller may see.
func (c *guardedCatalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	nss, err := c.Catalog.ListNamespaces(ctx, parent)
	if err != nil || c.policy == nil {
		return nss, err
	}
	out := nss[:0:0]
	for _, ns := range nss {
		if c.policy.CanSee(ctx, c.table(ns)) {
			out = append(out, ns)
		}
	}
	return out, nil
}

func (c *guardedCatalog) CreateNamespace(ctx context.Context, ns table.Identifier, props iceberg.Properties) error {
	if err := c.policy.Check(ctx, Create, c.table(ns)); err != nil {
		return err
	}
	return c.Catalog.CreateNamespace(ctx, ns, props)
}

func (c *guardedCatalog) DropNamespace(ctx context.Context, ns table.Identifier) error {
	if err := c.policy.Check(ctx, Drop, c.table(ns)); err != nil {
		return err
	}
	return c.Catalog.DropNamespace(ctx, ns)
}

func (c *guardedCatalog) UpdateNamespaceProperties(ctx context.Context, ns table.Identifier, removals []string, updates iceberg.Properties) (icecat.PropertiesUpdateSummary, error) {
	if err := c.policy.Check(ctx, Alter, c.table(ns)); err != nil {
		return icecat.PropertiesUpdateSummary{}, err
	}
	return c.Catalog.UpdateNamespaceProperties(ctx, ns, removals, updates)
}

// ListViews lists the views the caller may see; a catalog without views
// has none.
func (c *guardedCatalog) ListViews(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	vc, ok := c.Catalog.(viewCatalog)
	if !ok {
		return func(func(table.Identifier, error) bool) {}
	}
	return c.visible(ctx, vc.ListViews(ctx, ns))
}

// DropView needs DROP on the view.
func (c *guardedCatalog) DropView(ctx context.Context, ident table.Identifier) error {
	vc, ok := c.Catalog.(viewCatalog)
	if !ok {
		return fmt.Errorf("%w: %s", icecat.ErrNoSuchView, ident)
	}
	if err := c.policy.Check(ctx, Drop, c.table(ident)); err != nil {
		return err
	}
	return vc.DropView(ctx, ident)
}
