package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

// ErrViewsUnsupported: the mounted catalog's kind stores no Iceberg views
// in iceberg-go (Glue, Hive, Hadoop in v0.7.0).
var ErrViewsUnsupported = errors.New("catalog: the catalog does not store views")

// ViewDialect is the SQL dialect icefloe stores its views' SQL under.
const ViewDialect = "duckdb"

// View is a stored view as the planner expands it: its SQL and the
// catalog (the mount holding the view) and schema its unqualified names
// resolve in.
type View struct {
	SQL string
	// Schema is the view's result columns as stored.
	Schema           *iceberg.Schema
	DefaultCatalog   string
	DefaultNamespace []string
}

// Views are the view operations of one mounted catalog.
type Views interface {
	// CreateView stores a view; schema is its result's columns.
	CreateView(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, sql string) error
	LoadView(ctx context.Context, ident table.Identifier) (View, error)
	DropView(ctx context.Context, ident table.Identifier) error
	ListViews(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
}

// dropListViews are the view calls every view catalog of iceberg-go
// v0.7.0 spells the same.
type dropListViews interface {
	DropView(ctx context.Context, ident table.Identifier) error
	ListViews(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
}

// sqlViewCatalog is the SQL catalog's view API in iceberg-go v0.7.0.
type sqlViewCatalog interface {
	CreateView(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, sql string, props iceberg.Properties) error
	LoadView(ctx context.Context, ident table.Identifier) (view.Metadata, error)
	dropListViews
}

// restViewCatalog is the REST (and Hive) catalog's view API in
// iceberg-go v0.7.0.
type restViewCatalog interface {
	CreateView(ctx context.Context, ident table.Identifier, version *view.Version, schema *iceberg.Schema, opts ...icecat.CreateViewOpt) (*view.View, error)
	LoadView(ctx context.Context, ident table.Identifier) (*view.View, error)
	dropListViews
}

// commonViews implements the calls both spell the same.
type commonViews struct {
	name string
	c    dropListViews
}

func (v commonViews) DropView(ctx context.Context, ident table.Identifier) error {
	return classify(v.name, v.c.DropView(ctx, ident))
}

func (v commonViews) ListViews(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return v.c.ListViews(ctx, ns)
}

// Views returns the mount's view operations, or ErrViewsUnsupported
// naming the catalog. The caller authorizes each step.
func (m *Mount) Views() (Views, error) {
	switch c := m.raw.(type) {
	case sqlViewCatalog:
		return sqlViews{commonViews{m.Name, c}, c}, nil
	case restViewCatalog:
		return restViews{commonViews{m.Name, c}, c}, nil
	}
	return nil, fmt.Errorf("%w: catalog %s is of type %s, which keeps no views (the local and REST catalogs do)", ErrViewsUnsupported, m.Name, m.raw.CatalogType())
}

type sqlViews struct {
	commonViews
	sql sqlViewCatalog
}

func (v sqlViews) CreateView(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, sql string) error {
	return classify(v.name, v.sql.CreateView(ctx, ident, schema, sql, nil))
}

func (v sqlViews) LoadView(ctx context.Context, ident table.Identifier) (View, error) {
	md, err := v.sql.LoadView(ctx, ident)
	if err != nil {
		return View{}, classify(v.name, err)
	}
	return viewOf(v.name, md.CurrentVersion(), md.CurrentSchema())
}

type restViews struct {
	commonViews
	rest restViewCatalog
}

func (v restViews) CreateView(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, sql string) error {
	ver, err := view.NewVersion(1, schema.ID, view.Representations{view.NewRepresentation(sql, ViewDialect)}, ident[:len(ident)-1], view.WithDefaultViewCatalog(v.name))
	if err != nil {
		return err
	}
	_, err = v.rest.CreateView(ctx, ident, ver, schema)
	return classify(v.name, err)
}

func (v restViews) LoadView(ctx context.Context, ident table.Identifier) (View, error) {
	vw, err := v.rest.LoadView(ctx, ident)
	if err != nil {
		return View{}, classify(v.name, err)
	}
	return viewOf(v.name, vw.CurrentVersion(), vw.CurrentSchema())
}

// viewOf picks a version's SQL: DuckDB's dialect first, then iceberg-go's
// "default" (the SQL catalog's), then the first one stored. A view made
// by another engine may use SQL DuckDB reads otherwise: the planner parses
// it and says so.
func viewOf(catalogName string, ver *view.Version, schema *iceberg.Schema) (View, error) {
	if ver == nil || len(ver.Representations) == 0 {
		return View{}, fmt.Errorf("%w: the view has no SQL", icecat.ErrNoSuchView)
	}
	reps := ver.Representations
	pick := reps[0]
	for _, want := range []string{ViewDialect, "default"} {
		if i := slices.IndexFunc(reps, func(r view.Representation) bool { return strings.EqualFold(strings.TrimSpace(r.Dialect), want) }); i >= 0 {
			pick = reps[i]
			break
		}
	}
	// The stored default catalog is the name the catalog has for itself;
	// icefloe resolves in the mount that holds the view.
	return View{SQL: pick.Sql, Schema: schema, DefaultCatalog: catalogName, DefaultNamespace: ver.DefaultNamespace}, nil
}
