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
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/authz"
)

// TableTypeTable is the only table type icefloe lists.
const TableTypeTable = "TABLE"

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

// DoGetTables lists tables by catalog (exact), schema and table (LIKE
// patterns) and table type, sorted; with include_schema each row carries
// the table's current Arrow schema with column metadata (TableArrowSchema).
func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sc := tablesSchema(cmd.GetIncludeSchema())
	if types := cmd.GetTableTypes(); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool {
		return strings.EqualFold(t, TableTypeTable)
	}) {
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
		var names []string
		var tidents [][]string
		for ident, err := range mt.Catalog.ListTables(ctx, idents[i]) {
			if err != nil {
				return nil, nil, ToStatus(fmt.Errorf("list tables of %s.%s: %w", sch[0], sch[1], err))
			}
			if len(ident) == 0 {
				continue
			}
			name := ident[len(ident)-1]
			if matchPattern(cmd.GetTableNameFilterPattern(), name) {
				names = append(names, name)
				tidents = append(tidents, ident)
			}
		}
		order := make([]int, len(names))
		for j := range order {
			order[j] = j
		}
		slices.SortFunc(order, func(x, y int) int { return cmp.Compare(names[x], names[y]) })
		for _, j := range order {
			ref := catalog.TableRef{Catalog: sch[0], Schema: sch[1], Table: names[j]}
			var schemaBytes []byte
			if cmd.GetIncludeSchema() {
				tbl, err := mt.Catalog.LoadTable(ctx, tidents[j])
				if errors.Is(err, icecat.ErrNoSuchTable) || errors.Is(err, icecat.ErrNoSuchNamespace) {
					continue // dropped since it was listed
				}
				if err != nil {
					return nil, nil, ToStatus(fmt.Errorf("load table %s: %w", ref, err))
				}
				as, err := TableArrowSchema(ref, tbl.Schema())
				if err != nil {
					return nil, nil, ToStatus(err)
				}
				schemaBytes = flight.SerializeSchema(as, s.alloc)
			}
			b.Field(0).(*array.StringBuilder).Append(ref.Catalog)
			b.Field(1).(*array.StringBuilder).Append(ref.Schema)
			b.Field(2).(*array.StringBuilder).Append(ref.Table)
			b.Field(3).(*array.StringBuilder).Append(TableTypeTable)
			if cmd.GetIncludeSchema() {
				b.Field(4).(*array.BinaryBuilder).Append(schemaBytes)
			}
		}
	}
	return sc, oneBatch(b.NewRecordBatch()), nil
}

// GetFlightInfoTableTypes answers GetTableTypes.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes lists TABLE, the one kind icefloe has.
func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.alloc, schema_ref.TableTypes)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(TableTypeTable)
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
