package restcatalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/authz"
)

// The view endpoints: listing (what the caller may see), existence and
// drop (DROP on the view), loading (SELECT on the view, as a SQL read of
// it), creating (CREATE, as CREATE VIEW) and replacing (CREATE and DROP,
// as CREATE OR REPLACE VIEW) a view of a catalog that keeps them. The
// metadata is the catalog's as stored (catalog.Mount.ViewStore): every
// version, schema and representation, each SQL under its dialect; a view
// made through SQL holds DuckDB's SQL under the dialect "default".

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
	if vs, err := mt.Views(); err == nil {
		for ident, err := range vs.ListViews(r.Context(), table.Identifier{schema}) {
			if err != nil {
				return nil, err
			}
			ref := catalog.TableRef{Catalog: mt.Name, Schema: schema, Table: ident[len(ident)-1]}
			if s.opts.Policy.CanSee(r.Context(), authz.TableObject(ref)) {
				names = append(names, ref.Table)
			}
		}
	}
	return identifiers(r, schema, names)
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

// loadViewResult answers a view load, create and replace.
type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// viewResult is the answer for md stored at loc in mt. A version's
// default catalog that is the mount's own name (what SQL's CREATE VIEW
// records) is left out: a client resolves the view's names in the
// catalog it loaded the view from, which is that mount.
func viewResult(mt *catalog.Mount, md view.Metadata, loc string) (any, error) {
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if versions, ok := m["versions"].([]any); ok {
		for _, v := range versions {
			if vm, ok := v.(map[string]any); ok && vm["default-catalog"] == mt.Name {
				delete(vm, "default-catalog")
			}
		}
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return loadViewResult{MetadataLocation: loc, Metadata: raw, Config: map[string]string{}}, nil
}

func (s *Server) loadView(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := s.opts.Policy.Check(ctx, authz.Select, authz.TableObject(ref)); err != nil {
		return nil, err
	}
	vs, err := mt.ViewStore()
	if err != nil {
		return nil, err
	}
	md, loc, err := vs.LoadViewMetadata(ctx, ref.Ident())
	if err != nil {
		return nil, err
	}
	audit.From(ctx).Read(ref.String(), md.CurrentVersionID())
	return viewResult(mt, md, loc)
}

// createViewBody is the specification's CreateViewRequest.
type createViewBody struct {
	Name       string             `json:"name"`
	Location   string             `json:"location,omitempty"`
	Schema     *iceberg.Schema    `json:"schema"`
	Version    *view.Version      `json:"view-version"`
	Properties iceberg.Properties `json:"properties,omitempty"`
}

func (s *Server) createView(r *http.Request) (any, error) {
	var body createViewBody
	mt, schema, err := s.createIn(r, &body)
	if err != nil {
		return nil, err
	}
	if body.Name == "" || body.Schema == nil || body.Version == nil || len(body.Version.Representations) == 0 {
		return nil, badRequest("a view create names the view and gives its schema and a version with its SQL")
	}
	ref := catalog.TableRef{Catalog: mt.Name, Schema: schema, Table: body.Name}
	ctx := r.Context()
	if err := s.opts.Policy.Check(ctx, authz.Create, authz.TableObject(ref)); err != nil {
		return nil, err
	}
	vs, err := mt.ViewStore()
	if err != nil {
		return nil, err
	}
	if exists, err := mt.Catalog.CheckTableExists(ctx, ref.Ident()); err == nil && exists {
		return nil, fmt.Errorf("%w: %s is a table", icecat.ErrTableAlreadyExists, ref)
	}
	// A view owns its folder (its metadata files) as a table does.
	loc, chosen := strings.TrimSuffix(body.Location, "/"), body.Location != ""
	if !chosen {
		loc = mt.TableLocation(ctx, ref)
	}
	if _, err := s.placeTable(ctx, mt, ref, loc, chosen, nil); err != nil {
		return nil, err
	}
	if loc == "" && mt.Catalog.CatalogType() != icecat.REST {
		return nil, fmt.Errorf("%w: catalog %s, whose folder for schema %s cannot be told, needs the view's location", ErrUnsupported, mt.Name, schema)
	}
	md, mloc, err := vs.CreateViewMetadata(ctx, ref.Ident(), body.Version, body.Schema, loc, body.Properties)
	if err != nil {
		return nil, err
	}
	audit.From(ctx).Wrote(ref.String(), md.CurrentVersionID())
	return viewResult(mt, md, mloc)
}

// commitViewBody is the specification's CommitViewRequest.
type commitViewBody struct {
	Requirements view.Requirements `json:"requirements"`
	Updates      view.Updates      `json:"updates"`
}

// replaceView answers POST …/views/{view}: a new version of the view
// (what CREATE OR REPLACE VIEW does), needing CREATE and DROP on it as
// that statement does. Its location cannot change.
func (s *Server) replaceView(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	obj := authz.TableObject(ref)
	if err := errors.Join(s.opts.Policy.Check(ctx, authz.Create, obj), s.opts.Policy.Check(ctx, authz.Drop, obj)); err != nil {
		return nil, err
	}
	var body commitViewBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	vs, err := mt.ViewStore()
	if err != nil {
		return nil, err
	}
	cur, _, err := vs.LoadViewMetadata(ctx, ref.Ident())
	if err != nil {
		return nil, err
	}
	for _, u := range body.Updates {
		if u.Action() != "set-location" {
			continue
		}
		var v struct {
			Location string `json:"location"`
		}
		if b, err := json.Marshal(u); err == nil && json.Unmarshal(b, &v) == nil &&
			strings.TrimSuffix(v.Location, "/") == strings.TrimSuffix(cur.Location(), "/") {
			continue
		}
		return nil, fmt.Errorf("%w: %s: a view's location cannot change", ErrUnsupported, ref)
	}
	md, loc, err := vs.UpdateViewMetadata(ctx, ref.Ident(), body.Requirements, body.Updates)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			return nil, fmt.Errorf("%w: %v", ErrCommitFailed, err)
		}
		return nil, err
	}
	audit.From(ctx).Wrote(ref.String(), md.CurrentVersionID())
	return viewResult(mt, md, loc)
}

func (s *Server) dropView(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "view")
	if err != nil {
		return nil, err
	}
	if err := s.opts.Policy.Check(r.Context(), authz.Drop, authz.TableObject(ref)); err != nil {
		return nil, err
	}
	vs, err := mt.Views()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", icecat.ErrNoSuchView, ref)
	}
	audit.From(r.Context()).Wrote(ref.String(), 0)
	return nil, vs.DropView(r.Context(), ref.Ident())
}
