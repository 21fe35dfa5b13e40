package restcatalog

import (
	"context"
	"fmt"
	"iter"
	"net/http"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/authz"
)

// The view endpoints: listing (what the caller may see), existence and
// drop (DROP on the view) of the views of a catalog that keeps them.
// Loading and creating a view's metadata are not served: icefloe's
// catalogs return a view's SQL but not the metadata file a REST load
// answers with.

func (s *Server) listViews(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	schema, err := s.schema(r, mt)
	if err != nil {
		return nil, err
	}
	names := []string{}
	if vc, ok := mt.Catalog.(viewLister); ok {
		for ident, err := range vc.ListViews(r.Context(), table.Identifier{schema}) {
			if err != nil {
				return nil, err
			}
			names = append(names, ident[len(ident)-1])
		}
	}
	return identifiers(r, schema, names)
}

// viewLister is the view part of a guarded catalog.
type viewLister interface {
	ListViews(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
	DropView(ctx context.Context, ident table.Identifier) error
}

func (s *Server) viewExists(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	if !s.opts.Policy.CanSee(r.Context(), authz.TableObject(ref)) {
		return nil, fmt.Errorf("%w: %s", icecat.ErrNoSuchView, ref)
	}
	vs, err := mt.Views()
	if err != nil {
		return nil, err
	}
	if _, err := vs.LoadView(r.Context(), ref.Ident()); err != nil {
		return nil, err
	}
	return nil, nil
}

func (s *Server) loadView(r *http.Request) (any, error) {
	_, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: loading view %s through the REST catalog: query it through SQL", ErrUnsupported, ref)
}

func (s *Server) createView(r *http.Request) (any, error) {
	return nil, fmt.Errorf("%w: creating views through the REST catalog: CREATE VIEW through SQL", ErrUnsupported)
}

func (s *Server) dropView(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	vc, ok := mt.Catalog.(viewLister)
	if !ok {
		return nil, fmt.Errorf("%w: %s", icecat.ErrNoSuchView, ref)
	}
	return nil, vc.DropView(r.Context(), ref.Ident())
}
