package statement

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// The DDL of schemas and of dropping tables: it runs on the coordinator
// against the mounted catalogs.

func init() {
	runsDDL(parse.KindCreateSchema, (*Executor).createSchema)
	runsDDL(parse.KindDropSchema, (*Executor).dropSchema)
	runsDDL(parse.KindDropTable, (*Executor).dropTable)
}

// createSchema runs CREATE SCHEMA [IF NOT EXISTS] [catalog.]name [WITH (props)].
func (e *Executor) createSchema(ctx context.Context, sess planner.Session, cs *parse.CreateSchema) error {
	ifNotExists := cs.IfNotExists
	var props iceberg.Properties
	if cs.Props != nil {
		props = iceberg.Properties(cs.Props)
	}
	mt, catName, schema, err := e.schemaAt(sess, cs.Name)
	if err != nil {
		return err
	}
	if err := checkPlacement(mt, props); err != nil {
		return err
	}
	// A schema's folder is where its new tables go: choosing it is
	// choosing a location (LOCATION), and it may not be, hold or lie in a
	// table's place, nor hold another schema's folder or the warehouse.
	if placed := catalog.PlacesOf("", props)[1:]; len(placed) > 0 {
		if err := e.planner.Authorize(ctx, authz.SchemaObject(catName, schema), authz.Create, authz.Location); err != nil {
			return err
		}
		if err := e.free(ctx, placed, nil); err != nil {
			return err
		}
	}
	err = mt.Catalog.CreateNamespace(ctx, table.Identifier{schema}, props)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, icecat.ErrNamespaceAlreadyExists):
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("%w: schema %s.%s", planner.ErrExists, catName, schema)
	}
	return fmt.Errorf("create schema %s.%s: %w", catName, schema, err)
}

// schemaAt resolves the schema parts name: its catalog's mount, the
// catalog's name and the schema's.
func (e *Executor) schemaAt(sess planner.Session, parts []string) (*catalog.Mount, string, string, error) {
	catName, schema, err := schemaName(sess, parts)
	if err != nil {
		return nil, "", "", err
	}
	mt, err := e.planner.Mount(catName)
	return mt, catName, schema, err
}

// dropSchema runs DROP SCHEMA [IF EXISTS] [catalog.]name [CASCADE | RESTRICT]:
// CASCADE drops its tables and views first.
func (e *Executor) dropSchema(ctx context.Context, sess planner.Session, ds *parse.DropSchema) error {
	ifExists, cascade := ds.IfExists, ds.Cascade
	mt, catName, schema, err := e.schemaAt(sess, ds.Name)
	if err != nil {
		return err
	}
	cat, ns, full := mt.Catalog, table.Identifier{schema}, catName+"."+schema
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", full, err)
	}
	if !exists {
		if ifExists {
			return nil
		}
		return fmt.Errorf("%w: schema %s", planner.ErrNotFound, full)
	}
	tables, err := collect(cat.ListTables(ctx, ns))
	if err != nil {
		return fmt.Errorf("drop schema %s: list tables: %w", full, err)
	}
	var views []table.Identifier
	vc, hasViews := cat.(viewCatalog)
	if hasViews {
		if views, err = collect(vc.ListViews(ctx, ns)); err != nil {
			return fmt.Errorf("drop schema %s: list views: %w", full, err)
		}
	}
	if n := len(tables) + len(views); n > 0 && !cascade {
		return fmt.Errorf("%w: schema %s is not empty (%d tables or views); use DROP SCHEMA … CASCADE", planner.ErrInvalid, full, n)
	}
	for _, id := range tables {
		if err := cat.DropTable(ctx, id); err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
			return fmt.Errorf("drop schema %s: drop table %s: %w", full, strings.Join(id, "."), err)
		}
	}
	for _, id := range views {
		if err := vc.DropView(ctx, id); err != nil && !errors.Is(err, icecat.ErrNoSuchView) {
			return fmt.Errorf("drop schema %s: drop view %s: %w", full, strings.Join(id, "."), err)
		}
	}
	err = cat.DropNamespace(ctx, ns)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, icecat.ErrNoSuchNamespace):
		if ifExists {
			return nil
		}
		return fmt.Errorf("%w: schema %s", planner.ErrNotFound, full)
	case errors.Is(err, icecat.ErrNamespaceNotEmpty):
		return fmt.Errorf("%w: schema %s is not empty", planner.ErrInvalid, full)
	}
	return fmt.Errorf("drop schema %s: %w", full, err)
}

// viewCatalog is the part of iceberg-go's view support DROP SCHEMA …
// CASCADE needs.
type viewCatalog interface {
	ListViews(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
	DropView(ctx context.Context, identifier table.Identifier) error
}

func collect(seq iter.Seq2[table.Identifier, error]) ([]table.Identifier, error) {
	var out []table.Identifier
	for id, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// dropTable runs DROP TABLE [IF EXISTS] name [PURGE].
func (e *Executor) dropTable(ctx context.Context, sess planner.Session, dt *parse.DropTable) error {
	ifExists, purge := dt.IfExists, dt.Purge
	ref, err := planner.TableName(sess, dt.Name)
	if err != nil {
		return err
	}
	mt, err := e.planner.Mount(ref.Catalog)
	if err != nil {
		return err
	}
	if purge {
		// Only files no other table references (catalog.Mounts.DropPurge).
		err = e.opts.Mounts.DropPurge(ctx, mt, ref.Ident())
	} else {
		err = mt.Catalog.DropTable(ctx, ref.Ident())
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, icecat.ErrNoSuchTable), errors.Is(err, icecat.ErrNoSuchNamespace):
		if ifExists {
			return nil
		}
		return fmt.Errorf("%w: table %s", planner.ErrNotFound, ref)
	}
	return fmt.Errorf("drop table %s: %w", ref, err)
}

// schemaName resolves a one- or two-part schema name.
func schemaName(sess planner.Session, parts []string) (cat, schema string, err error) {
	cat = sess.Catalog
	if len(parts) == 2 {
		cat = parts[0]
	}
	schema = parts[len(parts)-1]
	switch {
	case cat == "":
		return "", "", fmt.Errorf("%w: %s names no catalog and the session has none", planner.ErrInvalid, strings.Join(parts, "."))
	case schema == "":
		return "", "", fmt.Errorf("%w: empty schema name", planner.ErrInvalid)
	case strings.Contains(schema, "."):
		return "", "", fmt.Errorf("%w: schema name %q has a dot", planner.ErrInvalid, schema)
	}
	return cat, schema, nil
}

// checkPlacement is catalog.Mount.CheckPlacement, refused as a statement's
// refusal (planner.ErrRefused).
func checkPlacement(mt *catalog.Mount, props iceberg.Properties) error {
	if err := mt.CheckPlacement(props); err != nil {
		return fmt.Errorf("%w: %w", planner.ErrRefused, err)
	}
	return nil
}
