package restcatalog

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// The namespace endpoints. icefloe's catalogs hold one-level namespaces
// (a SQL schema each); the guarded catalogs check CREATE, DROP and ALTER
// on them and list only what the caller may see.

type namespaceBody struct {
	Namespace  []string           `json:"namespace"`
	Properties iceberg.Properties `json:"properties"`
}

type listNamespacesResponse struct {
	Namespaces    [][]string `json:"namespaces"`
	NextPageToken *string    `json:"next-page-token,omitempty"`
}

func (s *Server) listNamespaces(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	if parent := r.URL.Query().Get("parent"); parent != "" {
		if _, err := oneLevel(parent); err != nil {
			return nil, err
		}
		return listNamespacesResponse{Namespaces: [][]string{}}, nil // no nested namespaces
	}
	nss, err := mt.Catalog.ListNamespaces(r.Context(), nil)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nss))
	for _, ns := range nss {
		names = append(names, strings.Join(ns, "\x1f"))
	}
	slices.Sort(names)
	page, next, err := paginate(r, names)
	if err != nil {
		return nil, err
	}
	out := listNamespacesResponse{Namespaces: make([][]string, len(page)), NextPageToken: next}
	for i, n := range page {
		out.Namespaces[i] = namespaceOf(n)
	}
	return out, nil
}

// paginate is one page of names (sorted) for the request's pageToken and
// pageSize: the token is the offset of the page, and the next page's
// token is set while names remain.
func paginate(r *http.Request, names []string) (page []string, next *string, err error) {
	q := r.URL.Query()
	off := 0
	if t := q.Get("pageToken"); t != "" {
		if off, err = strconv.Atoi(t); err != nil || off < 0 {
			return nil, nil, badRequest("pageToken %q is not one this server gave", t)
		}
	}
	size := len(names)
	if v := q.Get("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 1 {
			return nil, nil, badRequest("pageSize %q: want a positive number", v)
		}
	}
	if off > len(names) {
		off = len(names)
	}
	end := min(off+size, len(names))
	if end < len(names) {
		t := strconv.Itoa(end)
		next = &t
	}
	return names[off:end], next, nil
}

func (s *Server) createNamespace(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	var body namespaceBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if len(body.Namespace) != 1 {
		return nil, badRequest("namespace %q: icefloe's catalogs hold one-level namespaces", strings.Join(body.Namespace, "."))
	}
	name, err := oneLevel(body.Namespace[0])
	if err != nil {
		return nil, err
	}
	if err := s.placeSchema(r.Context(), mt, name, body.Properties); err != nil {
		return nil, err
	}
	if err := mt.Catalog.CreateNamespace(r.Context(), table.Identifier{name}, body.Properties); err != nil {
		return nil, err
	}
	props, err := mt.Catalog.LoadNamespaceProperties(r.Context(), table.Identifier{name})
	if err != nil {
		props = body.Properties
	}
	return namespaceBody{Namespace: []string{name}, Properties: nonNil(props)}, nil
}

// schema is the one-level namespace of the request's path, once the
// caller may see it.
func (s *Server) schema(r *http.Request, mt *catalog.Mount) (string, error) {
	name, err := oneLevel(r.PathValue("namespace"))
	if err != nil {
		return "", err
	}
	if !s.opts.Policy.CanSee(r.Context(), authz.SchemaObject(mt.Name, name)) {
		return "", fmt.Errorf("%w: %s has no privilege on %s", authz.ErrDenied, principalName(r), authz.SchemaObject(mt.Name, name))
	}
	return name, nil
}

func (s *Server) loadNamespace(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	name, err := s.schema(r, mt)
	if err != nil {
		return nil, err
	}
	props, err := mt.Catalog.LoadNamespaceProperties(r.Context(), table.Identifier{name})
	if err != nil {
		return nil, err
	}
	return namespaceBody{Namespace: []string{name}, Properties: nonNil(props)}, nil
}

func (s *Server) namespaceExists(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	name, err := s.schema(r, mt)
	if err != nil {
		return nil, err
	}
	ok, err := mt.Catalog.CheckNamespaceExists(r.Context(), table.Identifier{name})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s.%s", icecat.ErrNoSuchNamespace, mt.Name, name)
	}
	return nil, nil
}

func (s *Server) dropNamespace(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	name, err := oneLevel(r.PathValue("namespace"))
	if err != nil {
		return nil, err
	}
	return nil, mt.Catalog.DropNamespace(r.Context(), table.Identifier{name})
}

type updateNamespaceBody struct {
	Removals []string           `json:"removals"`
	Updates  iceberg.Properties `json:"updates"`
}

type updateNamespaceResponse struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing,omitempty"`
}

func (s *Server) updateNamespace(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	name, err := oneLevel(r.PathValue("namespace"))
	if err != nil {
		return nil, err
	}
	var body updateNamespaceBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	for _, k := range body.Removals {
		if _, ok := body.Updates[k]; ok {
			return nil, badRequest("property %q is both updated and removed", k)
		}
	}
	if err := s.placeSchema(r.Context(), mt, name, body.Updates); err != nil {
		return nil, err
	}
	sum, err := mt.Catalog.UpdateNamespaceProperties(r.Context(), table.Identifier{name}, body.Removals, body.Updates)
	if err != nil {
		return nil, err
	}
	return updateNamespaceResponse{Updated: nonNilList(sum.Updated), Removed: nonNilList(sum.Removed), Missing: sum.Missing}, nil
}

func nonNil(p iceberg.Properties) iceberg.Properties {
	if p == nil {
		return iceberg.Properties{}
	}
	return p
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
