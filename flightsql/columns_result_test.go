package flightsql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/catalog"
)

// GetTables(include_schema) types columns as queries return them: DuckDB
// returns UUIDs as text, nested ones included; fixed keeps its length.
func TestTableArrowSchemaUsesResultTypes(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 2, Name: "us", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.UUID}},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.FixedTypeOf(4)},
	)
	as, err := TableArrowSchema(catalog.TableRef{Catalog: "local", Schema: "default", Table: "t"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := as.Field(0).Type; !arrow.TypeEqual(got, arrow.BinaryTypes.String) {
		t.Errorf("uuid column: %s", got)
	}
	if got := as.Field(1).Type.(*arrow.ListType).Elem(); !arrow.TypeEqual(got, arrow.BinaryTypes.String) {
		t.Errorf("list<uuid> element: %s", got)
	}
	if got := as.Field(2).Type; !arrow.TypeEqual(got, &arrow.FixedSizeBinaryType{ByteWidth: 4}) {
		t.Errorf("fixed[4]: %s", got)
	}
	for i, want := range []string{"36", "", "4"} {
		md := as.Field(i).Metadata
		got := ""
		if j := md.FindKey("ARROW:FLIGHT:SQL:PRECISION"); j >= 0 {
			got = md.Values()[j]
		}
		if got != want {
			t.Errorf("field %d PRECISION = %q, want %q", i, got, want)
		}
	}
}
