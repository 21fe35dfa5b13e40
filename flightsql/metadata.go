package flightsql

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// The table types icefloe lists: Iceberg tables and Iceberg views.
const (
	TableTypeTable = "TABLE"
	TableTypeView  = "VIEW"
)

// metaInfo answers a metadata command with one endpoint the coordinator
// serves itself: the command is its own ticket.
func (s *Server) metaInfo(desc *flight.FlightDescriptor, sc *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.GetCmd()}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// oneBatch streams rec and then ends; the stream's consumer releases rec.
func oneBatch(rec arrow.RecordBatch) <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return ch
}

// emptyResult streams no rows with sc.
func (s *Server) emptyResult(sc *arrow.Schema) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.alloc, sc)
	defer b.Release()
	return sc, oneBatch(b.NewRecordBatch()), nil
}

// catalogNames returns the mounted catalogs the caller may see that the
// optional exact filter selects; "" selects none, as no table lives
// outside a catalog.
func (s *Server) catalogNames(ctx context.Context, filter *string) []string {
	var names []string
	for _, name := range s.opts.Mounts.Names() {
		if s.opts.Policy.CanSee(ctx, authz.Object{name}) {
			names = append(names, name)
		}
	}
	if filter == nil {
		return names
	}
	if slices.Contains(names, *filter) {
		return []string{*filter}
	}
	return nil
}

// GetFlightInfoCatalogs answers GetCatalogs.
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs lists the mounted catalogs the caller may see, sorted.
func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.alloc, schema_ref.Catalogs)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(s.catalogNames(ctx, nil), nil)
	return schema_ref.Catalogs, oneBatch(b.NewRecordBatch()), nil
}

// schemaName is the display name of a namespace.
func schemaName(ns []string) string { return strings.Join(ns, ".") }

// listSchemas lists the schemas of the selected catalogs that match the
// pattern, sorted by catalog and schema.
func (s *Server) listSchemas(ctx context.Context, catFilter, pattern *string) ([][2]string, [][]string, error) {
	type row struct {
		cat, name string
		ns        []string
	}
	var rows []row
	for _, cat := range s.catalogNames(ctx, catFilter) {
		mt, err := s.opts.Mounts.Get(cat)
		if err != nil {
			continue // unmounted since Names
		}
		nss, err := mt.Catalog.ListNamespaces(ctx, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("list schemas of catalog %s: %w", cat, err)
		}
		for _, ns := range nss {
			if name := schemaName(ns); matchPattern(pattern, name) {
				rows = append(rows, row{cat, name, ns})
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.cat, b.cat), cmp.Compare(a.name, b.name))
	})
	names := make([][2]string, len(rows))
	idents := make([][]string, len(rows))
	for i, r := range rows {
		names[i] = [2]string{r.cat, r.name}
		idents[i] = r.ns
	}
	return names, idents, nil
}

// GetFlightInfoSchemas answers GetDbSchemas.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas lists schemas by catalog (exact) and schema (LIKE pattern).
func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	names, _, err := s.listSchemas(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, ToStatus(err)
	}
	b := array.NewRecordBuilder(s.alloc, schema_ref.DBSchemas)
	defer b.Release()
	for _, n := range names {
		b.Field(0).(*array.StringBuilder).Append(n[0])
		b.Field(1).(*array.StringBuilder).Append(n[1])
	}
	return schema_ref.DBSchemas, oneBatch(b.NewRecordBatch()), nil
}

// GetFlightInfoTables answers GetTables.
func (s *Server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, tablesSchema(cmd.GetIncludeSchema())), nil
}

func tablesSchema(includeSchema bool) *arrow.Schema {
	if includeSchema {
		return schema_ref.TablesWithIncludedSchema
	}
	return schema_ref.Tables
}

// DoGetTables lists tables and views by catalog (exact), schema and
// table (LIKE patterns) and table type, sorted; with include_schema each
// row carries the current Arrow schema with column metadata
// (TableArrowSchema).
func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sc := tablesSchema(cmd.GetIncludeSchema())
	wants := func(kind string) bool {
		types := cmd.GetTableTypes()
		return len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, kind) })
	}
	if !wants(TableTypeTable) && !wants(TableTypeView) {
		return s.emptyResult(sc)
	}
	schemas, idents, err := s.listSchemas(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, ToStatus(err)
	}
	b := array.NewRecordBuilder(s.alloc, sc)
	defer b.Release()
	for i, sch := range schemas {
		mt, err := s.opts.Mounts.Get(sch[0])
		if err != nil {
			continue
		}
		var rows []tableRow
		if wants(TableTypeTable) {
			if rows, err = s.tableRows(ctx, mt, sch, idents[i], cmd); err != nil {
				return nil, nil, ToStatus(err)
			}
		}
		if wants(TableTypeView) {
			views, err := s.viewRows(ctx, mt, sch, idents[i], cmd)
			if err != nil {
				return nil, nil, ToStatus(err)
			}
			rows = append(rows, views...)
		}
		slices.SortFunc(rows, func(x, y tableRow) int { return cmp.Compare(x.name, y.name) })
		for _, r := range rows {
			b.Field(0).(*array.StringBuilder).Append(sch[0])
			b.Field(1).(*array.StringBuilder).Append(sch[1])
			b.Field(2).(*array.StringBuilder).Append(r.name)
			b.Field(3).(*array.StringBuilder).Append(r.kind)
			if cmd.GetIncludeSchema() {
				b.Field(4).(*array.BinaryBuilder).Append(r.schema)
			}
		}
	}
	return sc, oneBatch(b.NewRecordBatch()), nil
}

// tableRow is one row of GetTables.
type tableRow struct {
	name, kind string
	schema     []byte // with include_schema
}

// tableRows lists the tables of one schema that match the command.
func (s *Server) tableRows(ctx context.Context, mt *catalog.Mount, sch [2]string, ns table.Identifier, cmd flightsql.GetTables) ([]tableRow, error) {
	var rows []tableRow
	for ident, err := range mt.Catalog.ListTables(ctx, ns) {
		if err != nil {
			return nil, fmt.Errorf("list tables of %s.%s: %w", sch[0], sch[1], err)
		}
		if len(ident) == 0 || !matchPattern(cmd.GetTableNameFilterPattern(), ident[len(ident)-1]) {
			continue
		}
		ref := catalog.TableRef{Catalog: sch[0], Schema: sch[1], Table: ident[len(ident)-1]}
		r := tableRow{name: ref.Table, kind: TableTypeTable}
		if cmd.GetIncludeSchema() {
			tbl, err := mt.Catalog.LoadTable(ctx, ident)
			if errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace) {
				continue // dropped since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("load table %s: %w", ref, err)
			}
			if r.schema, err = s.arrowSchemaBytes(ref, tbl.Schema()); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// viewRows lists the views of one schema that match the command and the
// caller may see; none when the catalog keeps no views.
func (s *Server) viewRows(ctx context.Context, mt *catalog.Mount, sch [2]string, ns table.Identifier, cmd flightsql.GetTables) ([]tableRow, error) {
	views, err := mt.Views()
	if err != nil {
		return nil, nil
	}
	var rows []tableRow
	for ident, err := range views.ListViews(ctx, ns) {
		if err != nil {
			return nil, fmt.Errorf("list views of %s.%s: %w", sch[0], sch[1], err)
		}
		if len(ident) == 0 || !matchPattern(cmd.GetTableNameFilterPattern(), ident[len(ident)-1]) {
			continue
		}
		ref := catalog.TableRef{Catalog: sch[0], Schema: sch[1], Table: ident[len(ident)-1]}
		if !s.opts.Policy.CanSee(ctx, authz.TableObject(ref)) {
			continue
		}
		r := tableRow{name: ref.Table, kind: TableTypeView}
		if cmd.GetIncludeSchema() {
			v, err := views.LoadView(ctx, ident)
			if errors.Is(err, icecat.ErrNoSuchView) {
				continue // dropped since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("load view %s: %w", ref, err)
			}
			if r.schema, err = s.arrowSchemaBytes(ref, v.Schema); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (s *Server) arrowSchemaBytes(ref catalog.TableRef, sch *iceberg.Schema) ([]byte, error) {
	as, err := TableArrowSchema(ref, sch)
	if err != nil {
		return nil, err
	}
	return flight.SerializeSchema(as, s.alloc), nil
}

// GetFlightInfoTableTypes answers GetTableTypes.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes lists TABLE and VIEW.
func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.alloc, schema_ref.TableTypes)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(TableTypeTable)
	b.Field(0).(*array.StringBuilder).Append(TableTypeView)
	return schema_ref.TableTypes, oneBatch(b.NewRecordBatch()), nil
}

// Iceberg tables have no primary or foreign keys: the key commands answer
// with no rows for any name, patterns included, never an error.

func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.PrimaryKeys), nil
}

func (s *Server) DoGetPrimaryKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.PrimaryKeys)
}

func (s *Server) GetFlightInfoImportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ImportedKeys), nil
}

func (s *Server) DoGetImportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.ImportedKeys)
}

func (s *Server) GetFlightInfoExportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ExportedKeys), nil
}

func (s *Server) DoGetExportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.ExportedKeys)
}

func (s *Server) GetFlightInfoCrossReference(_ context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.CrossReference), nil
}

func (s *Server) DoGetCrossReference(context.Context, flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.emptyResult(schema_ref.CrossReference)
}
