package restcatalog

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/tablecrypt"
)

// identifier is a table's or view's name in request and answer bodies.
type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type listTablesResponse struct {
	Identifiers   []identifier `json:"identifiers"`
	NextPageToken *string      `json:"next-page-token,omitempty"`
}

// storageCredential is one prefix's storage configuration in a load's
// answer.
type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// loadTableResult answers a table load, create and staged create.
type loadTableResult struct {
	MetadataLocation   string              `json:"metadata-location,omitempty"`
	Metadata           table.Metadata      `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// tableAt is the table the request's path names: its mount and ref.
func (s *Server) tableAt(r *http.Request, key string) (*catalog.Mount, catalog.TableRef, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, catalog.TableRef{}, err
	}
	schema, err := oneLevel(r.PathValue("namespace"))
	if err != nil {
		return nil, catalog.TableRef{}, err
	}
	name := r.PathValue(key)
	if name == "" {
		return nil, catalog.TableRef{}, badRequest("empty %s name", key)
	}
	return mt, catalog.TableRef{Catalog: mt.Name, Schema: schema, Table: name}, nil
}

func (s *Server) listTables(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	schema, err := s.schema(r, mt)
	if err != nil {
		return nil, err
	}
	var names []string
	for ident, err := range mt.Catalog.ListTables(r.Context(), table.Identifier{schema}) {
		if err != nil {
			return nil, err
		}
		names = append(names, ident[len(ident)-1])
	}
	return identifiers(r, schema, names)
}

// identifiers is one page of names in schema.
func identifiers(r *http.Request, schema string, names []string) (any, error) {
	slices.Sort(names)
	page, next, err := paginate(r, names)
	if err != nil {
		return nil, err
	}
	out := listTablesResponse{Identifiers: make([]identifier, len(page)), NextPageToken: next}
	for i, n := range page {
		out.Identifiers[i] = identifier{Namespace: []string{schema}, Name: n}
	}
	return out, nil
}

// load pins the table for a caller holding SELECT on it (checked before
// the table is loaded, so a denied caller learns nothing about it).
func (s *Server) load(r *http.Request) (*catalog.Mount, *catalog.Pinned, error) {
	mt, ref, err := s.tableAt(r, "table")
	if err != nil {
		return nil, nil, err
	}
	if err := s.opts.Policy.Check(r.Context(), authz.Select, authz.TableObject(ref)); err != nil {
		return nil, nil, err
	}
	p, err := s.opts.Mounts.LoadTable(r.Context(), ref)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := p.StorageProps[tablecrypt.TableKeyProp]; ok {
		return nil, nil, fmt.Errorf("%w: %s is encrypted by icefloe (encryption.key-id): read it through SQL", ErrUnsupported, ref)
	}
	audit.From(r.Context()).Read(ref.String(), snapshotOf(p.Table.Metadata()))
	return mt, p, nil
}

func (s *Server) loadTable(r *http.Request) (any, error) {
	_, p, err := s.loadWhole(r)
	if err != nil {
		return nil, err
	}
	return s.result(p), nil
}

// loadWhole is load for an answer that hands out the table's metadata and
// files, which hold every row and value: refused to a caller whose grants
// filter rows or mask columns of the table (authz.Restriction), which
// only SQL applies.
func (s *Server) loadWhole(r *http.Request) (*catalog.Mount, *catalog.Pinned, error) {
	mt, p, err := s.load(r)
	if err != nil {
		return nil, nil, err
	}
	if err := s.refuseRestricted(r.Context(), p.Ref); err != nil {
		return nil, nil, err
	}
	return mt, p, nil
}

// refuseRestricted refuses ref's metadata and files to a caller whose
// grants restrict it, naming why.
func (s *Server) refuseRestricted(ctx context.Context, ref catalog.TableRef) error {
	rs := s.opts.Policy.Restriction(auth.FromContext(ctx), authz.TableObject(ref))
	if rs == nil {
		return nil
	}
	who := auth.Name(ctx)
	return fmt.Errorf("%w: %s reads %s under %s, which only SQL applies; the REST catalog would hand out the table's metadata and files with the rows and values hidden from %s, so it refuses: query the table through icefloe's Flight SQL endpoint", authz.ErrDenied, who, ref, rs, who)
}

func (s *Server) tableExists(r *http.Request) (any, error) {
	_, _, err := s.load(r)
	return nil, err
}

// result is the answer of a load: the pinned metadata and what the
// credential mode hands out.
func (s *Server) result(p *catalog.Pinned) loadTableResult {
	cfg, creds := s.storage(p)
	return loadTableResult{MetadataLocation: p.MetadataLocation, Metadata: p.Table.Metadata(), Config: cfg, StorageCredentials: creds}
}

type credentialsResponse struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

func (s *Server) loadCredentials(r *http.Request) (any, error) {
	_, p, err := s.loadWhole(r)
	if err != nil {
		return nil, err
	}
	_, creds := s.storage(p)
	return credentialsResponse{StorageCredentials: nonNilCreds(creds)}, nil
}

func nonNilCreds(c []storageCredential) []storageCredential {
	if c == nil {
		return []storageCredential{}
	}
	return c
}

// reportMetrics takes a client's scan or commit report (POST …/metrics)
// from a caller that may read the table, and keeps nothing of it.
func (s *Server) reportMetrics(r *http.Request) (any, error) {
	_, ref, err := s.tableAt(r, "table")
	if err != nil {
		return nil, err
	}
	return nil, s.opts.Policy.Check(r.Context(), authz.Select, authz.TableObject(ref))
}

// createTableBody is the specification's CreateTableRequest.
type createTableBody struct {
	Name          string                        `json:"name"`
	Location      string                        `json:"location,omitempty"`
	Schema        *iceberg.Schema               `json:"schema"`
	PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec,omitempty"`
	WriteOrder    *table.SortOrder              `json:"write-order,omitempty"`
	StageCreate   bool                          `json:"stage-create,omitempty"`
	Properties    iceberg.Properties            `json:"properties,omitempty"`
}

// createIn is the catalog and schema a create request's path names,
// with its body decoded into body.
func (s *Server) createIn(r *http.Request, body any) (*catalog.Mount, string, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, "", err
	}
	schema, err := oneLevel(r.PathValue("namespace"))
	if err != nil {
		return nil, "", err
	}
	return mt, schema, decode(r, body)
}

func (s *Server) createTable(r *http.Request) (any, error) {
	var body createTableBody
	mt, schema, err := s.createIn(r, &body)
	if err != nil {
		return nil, err
	}
	if body.Name == "" || body.Schema == nil {
		return nil, badRequest("a create names the table and gives its schema")
	}
	ref := catalog.TableRef{Catalog: mt.Name, Schema: schema, Table: body.Name}
	obj := authz.TableObject(ref)
	ctx := r.Context()
	if err := s.opts.Policy.Check(ctx, authz.Create, obj); err != nil {
		return nil, err
	}
	if err := reserved(body.Properties); err != nil {
		return nil, err
	}
	spec := iceberg.UnpartitionedSpec
	if body.PartitionSpec != nil {
		spec = &body.PartitionSpec.PartitionSpec
	}
	order := table.UnsortedSortOrder
	if body.WriteOrder != nil {
		order = *body.WriteOrder
	}
	loc, chosen := strings.TrimSuffix(body.Location, "/"), body.Location != ""
	if !chosen {
		if loc, err = newLocation(ctx, mt, ref, body.StageCreate); err != nil {
			return nil, err
		}
	}
	pl, err := s.placeTable(ctx, mt, ref, loc, chosen, body.Properties)
	if err != nil {
		return nil, err
	}
	if body.StageCreate {
		return s.stageCreate(r, mt, ref, body, spec, order, loc)
	}
	opts := []icecat.CreateTableOpt{icecat.WithPartitionSpec(spec), icecat.WithSortOrder(order), icecat.WithProperties(body.Properties)}
	if loc != "" {
		opts = append(opts, icecat.WithLocation(loc))
	}
	if _, err := mt.Catalog.CreateTable(ctx, ref.Ident(), body.Schema, opts...); err != nil {
		return nil, err
	}
	if err := s.settle(ctx, mt, ref, pl); err != nil {
		return nil, err
	}
	audit.From(ctx).Wrote(ref.String(), 0)
	p, err := s.opts.Mounts.LoadTable(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s.result(p), nil
}

// stageCreate answers a staged create (stage-create: true, what Spark's
// CREATE TABLE … AS and pyiceberg's create-table transactions send): the
// new table's metadata at loc, committed later by an update with
// assert-create. Nothing is written; a location icefloe chose is
// remembered, so that the commit tells it from one the client chose.
func (s *Server) stageCreate(r *http.Request, mt *catalog.Mount, ref catalog.TableRef, body createTableBody, spec *iceberg.PartitionSpec, order table.SortOrder, loc string) (any, error) {
	ctx := r.Context()
	exists, err := mt.Catalog.CheckTableExists(ctx, ref.Ident())
	if err != nil {
		return nil, err
	}
	if exists {
		return nil, fmt.Errorf("%w: %s", icecat.ErrTableAlreadyExists, ref)
	}
	meta, err := table.NewMetadata(body.Schema, spec, order, loc, body.Properties)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if body.Location == "" {
		s.proposed.Add(proposalKey(ref, loc), struct{}{})
	}
	return loadTableResult{Metadata: meta, Config: map[string]string{}}, nil
}

// snapshotOf is meta's current snapshot id, 0 when it has none (as the
// audit log records a table use).
func snapshotOf(meta table.Metadata) int64 {
	if snap := meta.CurrentSnapshot(); snap != nil {
		return snap.SnapshotID
	}
	return 0
}

// withKey is props with key set to v when v is not empty, as a new map.
func withKey(props iceberg.Properties, key, v string) iceberg.Properties {
	out := iceberg.Properties{}
	for k, pv := range props {
		out[k] = pv
	}
	if v != "" {
		out[key] = v
	}
	return out
}

// reserved refuses table properties icefloe keeps for itself: its own
// (icefloe.*) and table encryption's (encryption.*), which only SQL sets.
func reserved(props iceberg.Properties) error {
	for _, k := range catalog.SortedKeys(props) {
		if isReserved(k) {
			return fmt.Errorf("%w: table property %q is set by icefloe's SQL only", authz.ErrDenied, k)
		}
	}
	return nil
}

func isReserved(k string) bool {
	l := strings.ToLower(k)
	return strings.HasPrefix(l, "icefloe.") || strings.HasPrefix(l, "encryption.")
}

func (s *Server) dropTable(r *http.Request) (any, error) {
	mt, ref, err := s.tableAt(r, "table")
	if err != nil {
		return nil, err
	}
	audit.From(r.Context()).Wrote(ref.String(), 0)
	if purge := r.URL.Query().Get("purgeRequested"); strings.EqualFold(purge, "true") {
		return nil, s.opts.Mounts.DropPurge(r.Context(), mt, ref.Ident())
	}
	return nil, mt.Catalog.DropTable(r.Context(), ref.Ident())
}

type renameBody struct {
	Source      identifier `json:"source"`
	Destination identifier `json:"destination"`
}

func (s *Server) renameTable(r *http.Request) (any, error) {
	mt, err := s.mount(r)
	if err != nil {
		return nil, err
	}
	var body renameBody
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	from, err := identOf(body.Source)
	if err != nil {
		return nil, err
	}
	to, err := identOf(body.Destination)
	if err != nil {
		return nil, err
	}
	rec := audit.From(r.Context())
	rec.Wrote(catalog.TableRef{Catalog: mt.Name, Schema: from[0], Table: from[1]}.String(), 0)
	rec.Wrote(catalog.TableRef{Catalog: mt.Name, Schema: to[0], Table: to[1]}.String(), 0)
	_, err = mt.Catalog.RenameTable(r.Context(), from, to)
	return nil, err
}

// identOf is a body's identifier as a table identifier of a one-level
// namespace.
func identOf(id identifier) (table.Identifier, error) {
	if len(id.Namespace) != 1 || id.Name == "" {
		return nil, badRequest("identifier %q: icefloe's catalogs hold one-level namespaces", strings.Join(append(slices.Clone(id.Namespace), id.Name), "."))
	}
	if _, err := oneLevel(id.Namespace[0]); err != nil {
		return nil, err
	}
	return table.Identifier{id.Namespace[0], id.Name}, nil
}
