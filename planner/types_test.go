package planner

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/icefloe/icefloe/internal/engine"
)

func TestDuckTypeOf(t *testing.T) {
	list := &iceberg.ListType{ElementID: 1, Element: iceberg.PrimitiveTypes.String}
	mp := &iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.String, ValueID: 3, ValueType: list}
	st := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 4, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
		{ID: 5, Name: `we"ird`, Type: mp},
	}}
	for _, c := range []struct {
		in   iceberg.Type
		want string
	}{
		{iceberg.PrimitiveTypes.Bool, "BOOLEAN"},
		{iceberg.PrimitiveTypes.Int32, "INTEGER"},
		{iceberg.PrimitiveTypes.Int64, "BIGINT"},
		{iceberg.PrimitiveTypes.Float32, "FLOAT"},
		{iceberg.PrimitiveTypes.Float64, "DOUBLE"},
		{iceberg.DecimalTypeOf(12, 2), "DECIMAL(12,2)"},
		{iceberg.DecimalTypeOf(38, 0), "DECIMAL(38,0)"},
		{iceberg.PrimitiveTypes.Date, "DATE"},
		{iceberg.PrimitiveTypes.Time, "TIME"},
		{iceberg.PrimitiveTypes.Timestamp, "TIMESTAMP"},
		{iceberg.PrimitiveTypes.TimestampTz, "TIMESTAMPTZ"},
		{iceberg.PrimitiveTypes.TimestampNs, "TIMESTAMP_NS"},
		{iceberg.PrimitiveTypes.String, "VARCHAR"},
		{iceberg.PrimitiveTypes.UUID, "UUID"},
		{iceberg.PrimitiveTypes.Binary, "BLOB"},
		{iceberg.FixedTypeOf(16), "BLOB"},
		{list, "VARCHAR[]"},
		{mp, "MAP(VARCHAR, VARCHAR[])"},
		{st, `STRUCT("a" INTEGER, "we""ird" MAP(VARCHAR, VARCHAR[]))`},
	} {
		got, err := DuckTypeOf(c.in)
		if err != nil || got != c.want {
			t.Errorf("DuckTypeOf(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []iceberg.Type{
		iceberg.PrimitiveTypes.TimestampTzNs,
		iceberg.PrimitiveTypes.Unknown,
		iceberg.VariantType{},
		&iceberg.ListType{ElementID: 1, Element: iceberg.PrimitiveTypes.TimestampTzNs},
		&iceberg.StructType{},
	} {
		if got, err := DuckTypeOf(bad); !errors.Is(err, ErrUnsupported) {
			t.Errorf("DuckTypeOf(%s) = %q, %v; want ErrUnsupported", bad, got, err)
		}
	}
}

// TestTypesRoundTrip makes a DuckDB column of DuckTypeOf(t) for each
// Iceberg type and maps DuckDB's type back: every type icefloe can create
// comes back as itself.
func TestTypesRoundTrip(t *testing.T) {
	ctx := context.Background()
	conn := testConn(t)
	types := []iceberg.Type{
		iceberg.PrimitiveTypes.Bool, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64,
		iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, iceberg.DecimalTypeOf(9, 3),
		iceberg.DecimalTypeOf(38, 38), iceberg.PrimitiveTypes.Date, iceberg.PrimitiveTypes.Time,
		iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampTz, iceberg.PrimitiveTypes.String,
		iceberg.PrimitiveTypes.UUID, iceberg.PrimitiveTypes.Binary,
		&iceberg.ListType{ElementID: 100, Element: iceberg.PrimitiveTypes.Int64},
		&iceberg.MapType{KeyID: 100, KeyType: iceberg.PrimitiveTypes.String, ValueID: 101, ValueType: iceberg.PrimitiveTypes.Float64},
		&iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 100, Name: "a b", Type: iceberg.PrimitiveTypes.Date},
			{ID: 101, Name: "c", Type: &iceberg.ListType{ElementID: 102, Element: iceberg.PrimitiveTypes.UUID}},
		}},
	}
	defs := ""
	for i, typ := range types {
		d, err := DuckTypeOf(typ)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			defs += ", "
		}
		defs += engine.Quote(string(rune('a'+i))) + " " + d
	}
	if err := conn.Exec(ctx, "CREATE TEMP TABLE rt ("+defs+")"); err != nil {
		t.Fatal(err)
	}
	err := conn.DB().Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "SELECT * FROM rt")
		if err != nil {
			return err
		}
		defer st.Close()
		ds := st.(*duckdb.Stmt)
		for i, want := range types {
			ti, err := ds.ColumnTypeInfo(i)
			if err != nil {
				return err
			}
			// Nested ids come from nextID; start them where the test's are.
			id := 99
			got, err := ddlIcebergType(ti, func() int { id++; return id })
			if err != nil {
				t.Errorf("%s: %v", want, err)
				continue
			}
			if !got.Equals(want) {
				t.Errorf("round trip of %s gave %s", want, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
