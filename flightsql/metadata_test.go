package flightsql

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func ptr(s string) *string { return &s }

// checkSchemas asserts that the FlightInfo schema and the stream schema
// both equal want exactly, nullability and metadata included.
func checkSchemas(t *testing.T, info *flight.FlightInfo, stream, want *arrow.Schema) {
	t.Helper()
	if got := infoSchema(t, info); !got.Equal(want) {
		t.Errorf("FlightInfo schema:\n%s\nwant:\n%s", got, want)
	}
	if !stream.Equal(want) {
		t.Errorf("stream schema:\n%s\nwant:\n%s", stream, want)
	}
}

func TestGetCatalogs(t *testing.T) {
	e := start(t)
	info, err := e.client.GetCatalogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, schema_ref.Catalogs)
	if got := column(recs, 0); !slices.Equal(got, []string{"local", "other"}) {
		t.Errorf("catalogs = %v", got)
	}
}

func TestGetDBSchemas(t *testing.T) {
	e := start(t)
	for _, c := range []struct {
		name    string
		catalog *string
		pattern *string
		want    []string
	}{
		{"all", nil, nil, []string{"local.default", "local.sa_es", "local.sales", "other.default"}},
		{"percent", ptr("local"), ptr("%"), []string{"local.default", "local.sa_es", "local.sales"}},
		{"underscore wildcard", ptr("local"), ptr("sa_es"), []string{"local.sa_es", "local.sales"}},
		{"escaped underscore", ptr("local"), ptr(`sa\_es`), []string{"local.sa_es"}},
		{"prefix", nil, ptr("d%"), []string{"local.default", "other.default"}},
		{"empty catalog", ptr(""), nil, nil},
		{"unknown catalog", ptr("nope"), nil, nil},
		{"no match", nil, ptr("zzz%"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := e.client.GetDBSchemas(context.Background(), &flightsql.GetDBSchemasOpts{Catalog: c.catalog, DbSchemaFilterPattern: c.pattern})
			if err != nil {
				t.Fatal(err)
			}
			sc, recs := fetch(t, e.client, info)
			checkSchemas(t, info, sc, schema_ref.DBSchemas)
			var got []string
			cats, schemas := column(recs, 0), column(recs, 1)
			for i := range cats {
				got = append(got, cats[i]+"."+schemas[i])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("schemas = %v, want %v", got, c.want)
			}
		})
	}
}

func tableNames(recs []arrow.RecordBatch) []string {
	var out []string
	cats, schemas, names, types := column(recs, 0), column(recs, 1), column(recs, 2), column(recs, 3)
	for i := range cats {
		out = append(out, cats[i]+"."+schemas[i]+"."+names[i]+":"+types[i])
	}
	return out
}

func TestGetTables(t *testing.T) {
	e := start(t)
	mt, err := e.srv.opts.Mounts.Get("local")
	if err != nil {
		t.Fatal(err)
	}
	views, err := mt.Views()
	if err != nil {
		t.Fatal(err)
	}
	vs := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int32})
	if err := views.CreateView(context.Background(), table.Identifier{"sales", "recent"}, vs, "SELECT 1 AS x"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts *flightsql.GetTablesOpts
		want []string
	}{
		{"all", &flightsql.GetTablesOpts{}, []string{
			"local.default.orderXitems:TABLE", "local.default.order_items:TABLE", "local.default.orders:TABLE",
			"local.sales.facts:TABLE", "local.sales.recent:VIEW", "other.default.remote:TABLE"}},
		{"catalog", &flightsql.GetTablesOpts{Catalog: ptr("other")}, []string{"other.default.remote:TABLE"}},
		{"schema pattern", &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("sal%")}, []string{"local.sales.facts:TABLE", "local.sales.recent:VIEW"}},
		{"underscore wildcard", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr("order_items")}, []string{
			"local.default.orderXitems:TABLE", "local.default.order_items:TABLE"}},
		{"escaped underscore", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr(`order\_items`)}, []string{
			"local.default.order_items:TABLE"}},
		{"percent", &flightsql.GetTablesOpts{Catalog: ptr("local"), DbSchemaFilterPattern: ptr("default"), TableNameFilterPattern: ptr("%s")}, []string{
			"local.default.orderXitems:TABLE", "local.default.order_items:TABLE", "local.default.orders:TABLE"}},
		{"type TABLE", &flightsql.GetTablesOpts{Catalog: ptr("other"), TableTypes: []string{"VIEW", "TABLE"}}, []string{"other.default.remote:TABLE"}},
		{"type VIEW", &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}}, []string{"local.sales.recent:VIEW"}},
		{"type table", &flightsql.GetTablesOpts{Catalog: ptr("local"), DbSchemaFilterPattern: ptr("sales"), TableTypes: []string{"table"}}, []string{"local.sales.facts:TABLE"}},
		{"empty catalog", &flightsql.GetTablesOpts{Catalog: ptr("")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := e.client.GetTables(context.Background(), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			sc, recs := fetch(t, e.client, info)
			checkSchemas(t, info, sc, schema_ref.Tables)
			if sc.NumFields() != 4 {
				t.Errorf("include_schema=false returned %d columns", sc.NumFields())
			}
			if got := tableNames(recs); !slices.Equal(got, c.want) {
				t.Errorf("tables = %v, want %v", got, c.want)
			}
		})
	}
}

func TestGetTablesIncludeSchema(t *testing.T) {
	e := start(t)
	info, err := e.client.GetTables(context.Background(), &flightsql.GetTablesOpts{
		Catalog: ptr("local"), DbSchemaFilterPattern: ptr("default"), TableNameFilterPattern: ptr("orders"), IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, schema_ref.TablesWithIncludedSchema)
	if got := tableNames(recs); !slices.Equal(got, []string{"local.default.orders:TABLE"}) {
		t.Fatalf("tables = %v", got)
	}
	raw := recs[0].Column(4).(*array.Binary).Value(0)
	ts, err := flight.DeserializeSchema(raw, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		name, typeName, prec, scale, remarks string
		nullable                             bool
		arrowType                            arrow.Type
	}
	want := []col{
		{"id", "BIGINT", "19", "0", "order id", false, arrow.INT64},
		{"amount", "DECIMAL(12,2)", "12", "2", "order amount", true, arrow.DECIMAL128},
		{"note", "VARCHAR", "", "", "", true, arrow.STRING},
		{"placed_at", "TIMESTAMP WITH TIME ZONE", "", "", "", true, arrow.TIMESTAMP},
		{"tags", "VARCHAR[]", "", "", "", true, arrow.LIST},
		{"ship to", "STRUCT(city VARCHAR)", "", "", "", true, arrow.STRUCT},
	}
	if ts.NumFields() != len(want) {
		t.Fatalf("table schema: %s", ts)
	}
	for i, w := range want {
		f := ts.Field(i)
		md := flightsql.ColumnMetadata{Data: &f.Metadata}
		get := func(name string, fn func() (string, bool)) string {
			v, _ := fn()
			return v
		}
		if f.Name != w.name || f.Nullable != w.nullable || f.Type.ID() != w.arrowType {
			t.Errorf("field %d = %s, want %s nullable=%v type=%s", i, f, w.name, w.nullable, w.arrowType)
		}
		if got := get("type", md.TypeName); got != w.typeName {
			t.Errorf("%s TYPE_NAME = %q, want %q", w.name, got, w.typeName)
		}
		prec, hasPrec := md.Precision()
		scale, hasScale := md.Scale()
		if w.prec == "" {
			if hasPrec || hasScale {
				t.Errorf("%s has precision/scale %d/%d", w.name, prec, scale)
			}
		} else if !hasPrec || !hasScale || strconv.Itoa(int(prec)) != w.prec || strconv.Itoa(int(scale)) != w.scale {
			t.Errorf("%s precision/scale = %d/%d, want %s/%s", w.name, prec, scale, w.prec, w.scale)
		}
		rem, hasRem := md.Remarks()
		if rem != w.remarks || hasRem != (w.remarks != "") {
			t.Errorf("%s REMARKS = %q (%v), want %q", w.name, rem, hasRem, w.remarks)
		}
		if auto, ok := md.IsAutoIncrement(); !ok || auto {
			t.Errorf("%s IS_AUTO_INCREMENT = %v, %v", w.name, auto, ok)
		}
		cat, _ := md.CatalogName()
		sch, _ := md.SchemaName()
		tbl, _ := md.TableName()
		if cat != "local" || sch != "default" || tbl != "orders" {
			t.Errorf("%s names = %s.%s.%s", w.name, cat, sch, tbl)
		}
	}
}

func TestGetTableTypes(t *testing.T) {
	e := start(t)
	info, err := e.client.GetTableTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, schema_ref.TableTypes)
	if got := column(recs, 0); !slices.Equal(got, []string{"TABLE", "VIEW"}) {
		t.Errorf("table types = %v", got)
	}
}

// DBeaver asks for keys with table "%": the answer is empty, not an error.
func TestKeysAreEmpty(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	ref := flightsql.TableRef{Catalog: ptr("local"), DBSchema: ptr("default"), Table: "%"}
	for _, c := range []struct {
		name string
		get  func() (*flight.FlightInfo, error)
		want *arrow.Schema
	}{
		{"primary", func() (*flight.FlightInfo, error) { return e.client.GetPrimaryKeys(ctx, ref) }, schema_ref.PrimaryKeys},
		{"imported", func() (*flight.FlightInfo, error) { return e.client.GetImportedKeys(ctx, ref) }, schema_ref.ImportedKeys},
		{"exported", func() (*flight.FlightInfo, error) { return e.client.GetExportedKeys(ctx, ref) }, schema_ref.ExportedKeys},
		{"cross", func() (*flight.FlightInfo, error) { return e.client.GetCrossReference(ctx, ref, ref) }, schema_ref.CrossReference},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := c.get()
			if err != nil {
				t.Fatal(err)
			}
			sc, recs := fetch(t, e.client, info)
			checkSchemas(t, info, sc, c.want)
			if n := rows(recs); n != 0 {
				t.Errorf("%d rows", n)
			}
		})
	}
}

func TestGetXdbcTypeInfo(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	info, err := e.client.GetXdbcTypeInfo(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, recs := fetch(t, e.client, info)
	checkSchemas(t, info, sc, schema_ref.XdbcTypeInfo)
	names := column(recs, 0)
	for _, want := range []string{"BIGINT", "DECIMAL", "VARCHAR", "TIMESTAMP WITH TIME ZONE", "BOOLEAN"} {
		if !slices.Contains(names, want) {
			t.Errorf("type info lacks %s: %v", want, names)
		}
	}
	codes := column(recs, 1)
	if !slices.IsSortedFunc(codes, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	}) {
		t.Errorf("not ordered by data_type: %v", codes)
	}
	four := int32(4)
	info, err = e.client.GetXdbcTypeInfo(ctx, &four)
	if err != nil {
		t.Fatal(err)
	}
	_, recs = fetch(t, e.client, info)
	if got := column(recs, 0); !slices.Equal(got, []string{"INTEGER"}) {
		t.Errorf("data type 4 = %v", got)
	}
}

// GetSchema of every metadata command answers the reference schema too.
func TestMetadataGetSchema(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	res, err := e.client.GetTablesSchema(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := flight.DeserializeSchema(res.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Equal(schema_ref.TablesWithIncludedSchema) {
		t.Errorf("GetTablesSchema = %s", sc)
	}
}
