package statement

import (
	"context"
	"errors"
	"fmt"

	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// The DDL of views: CREATE [OR REPLACE] VIEW and DROP VIEW store and drop
// Iceberg views in the catalogs that keep them (planner.Planner.Views);
// the planner expands them in queries (planner/views.go).

func init() {
	runsDDL(parse.KindCreateView, (*Executor).createView)
	runsDDL(parse.KindDropView, (*Executor).dropView)
}

// createView runs CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name AS
// query. The query must plan (its names resolving in the view's schema);
// its result columns are the view's schema. OR REPLACE drops the old view
// and stores the new one (two catalog calls: iceberg-go v0.7.0 has no
// view replace for the SQL catalog).
func (e *Executor) createView(ctx context.Context, sess planner.Session, cv *parse.CreateView) error {
	replace, ifNotExists, query := cv.OrReplace, cv.IfNotExists, cv.Query
	ref, err := planner.TableName(sess, cv.Name)
	if err != nil {
		return err
	}
	ref = e.planner.ExistingSchema(ctx, ref)
	if err := e.planner.Authorize(ctx, authz.TableObject(ref), authz.Create); err != nil {
		return err
	}
	views, err := e.planner.Views(ref)
	if err != nil {
		return err
	}
	viewSess := planner.Session{Catalog: ref.Catalog, Schema: ref.Schema}
	columns, err := e.planner.QueryColumns(ctx, viewSess, query)
	if err != nil {
		return err
	}
	schema, err := e.planner.ParseColumns(ctx, ref.Table, columns)
	if err != nil {
		return err
	}
	if exists, _ := e.tableExists(ctx, ref); exists {
		return fmt.Errorf("%w: %s is a table", planner.ErrExists, ref)
	}
	if _, err := views.LoadView(ctx, ref.Ident()); err == nil {
		switch {
		case ifNotExists:
			return nil
		case !replace:
			return fmt.Errorf("%w: view %s", planner.ErrExists, ref)
		}
		if err := e.planner.Authorize(ctx, authz.TableObject(ref), authz.Drop); err != nil {
			return err
		}
		if err := views.DropView(ctx, ref.Ident()); err != nil {
			return fmt.Errorf("replace view %s: %w", ref, err)
		}
	}
	if err := views.CreateView(ctx, ref.Ident(), schema, query.Text); err != nil {
		switch {
		case errors.Is(err, icecat.ErrViewAlreadyExists), errors.Is(err, icecat.ErrTableAlreadyExists):
			return fmt.Errorf("%w: %s", planner.ErrExists, ref)
		case errors.Is(err, icecat.ErrNoSuchNamespace):
			return fmt.Errorf("%w: schema %s.%s", planner.ErrNotFound, ref.Catalog, ref.Schema)
		}
		return fmt.Errorf("create view %s: %w", ref, err)
	}
	return nil
}

// dropView runs DROP VIEW [IF EXISTS] name.
func (e *Executor) dropView(ctx context.Context, sess planner.Session, dv *parse.DropView) error {
	ifExists := dv.IfExists
	ref, err := planner.TableName(sess, dv.Name)
	if err != nil {
		return err
	}
	ref = e.planner.ExistingSchema(ctx, ref)
	if err := e.planner.Authorize(ctx, authz.TableObject(ref), authz.Drop); err != nil {
		return err
	}
	views, err := e.planner.Views(ref)
	if err != nil {
		return err
	}
	if err := views.DropView(ctx, ref.Ident()); err != nil {
		if errors.Is(err, icecat.ErrNoSuchView) || errors.Is(err, icecat.ErrNoSuchNamespace) {
			if ifExists {
				return nil
			}
			return fmt.Errorf("%w: view %s", planner.ErrNotFound, ref)
		}
		return fmt.Errorf("drop view %s: %w", ref, err)
	}
	return nil
}

// tableExists reports whether ref names a table of its catalog.
func (e *Executor) tableExists(ctx context.Context, ref catalog.TableRef) (bool, error) {
	mt, err := e.planner.Mount(ref.Catalog)
	if err != nil {
		return false, err
	}
	return mt.Catalog.CheckTableExists(ctx, ref.Ident())
}
