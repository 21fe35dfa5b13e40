package colmeta

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// PRECISION and SCALE are set exactly for the types that have them, and
// Schema keeps the schema's own metadata.
func TestMetadataPrecisionScale(t *testing.T) {
	cases := []struct {
		name      string
		typ       arrow.DataType
		prec, scl string
	}{
		{"DECIMAL(12,2)", &arrow.Decimal128Type{Precision: 12, Scale: 2}, "12", "2"},
		{"DECIMAL(38,38)", &arrow.Decimal128Type{Precision: 38, Scale: 38}, "38", "38"},
		{"HUGEINT", &arrow.Decimal128Type{Precision: 38, Scale: 0}, "38", "0"},
		{"TINYINT", arrow.PrimitiveTypes.Int8, "3", "0"},
		{"SMALLINT", arrow.PrimitiveTypes.Int16, "5", "0"},
		{"INTEGER", arrow.PrimitiveTypes.Int32, "10", "0"},
		{"BIGINT", arrow.PrimitiveTypes.Int64, "19", "0"},
		{"UUID", arrow.BinaryTypes.String, "36", "0"},
		{"BLOB", &arrow.FixedSizeBinaryType{ByteWidth: 4}, "4", "0"},
		{"VARCHAR", arrow.BinaryTypes.String, "", ""},
		{"DOUBLE", arrow.PrimitiveTypes.Float64, "", ""},
		{"TIMESTAMP WITH TIME ZONE", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "", ""},
	}
	for _, c := range cases {
		md := Metadata(Column{TypeName: c.name, Type: c.typ})
		get := func(k string) string {
			v, _ := md.GetValue(k)
			return v
		}
		if get("ARROW:FLIGHT:SQL:TYPE_NAME") != c.name || get("ARROW:FLIGHT:SQL:PRECISION") != c.prec ||
			get("ARROW:FLIGHT:SQL:SCALE") != c.scl || get("ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT") != "0" {
			t.Errorf("%s: metadata %v", c.name, md)
		}
	}
	smd := arrow.NewMetadata([]string{"k"}, []string{"v"})
	s := Schema(arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}}, &smd),
		[]string{"BIGINT"})
	if v, _ := s.Metadata().GetValue("k"); v != "v" {
		t.Errorf("schema metadata lost: %v", s.Metadata())
	}
	if v, _ := s.Field(0).Metadata.GetValue("ARROW:FLIGHT:SQL:TYPE_NAME"); v != "BIGINT" {
		t.Errorf("field a: %v", s.Field(0).Metadata)
	}
	if s.Field(1).Metadata.FindKey("ARROW:FLIGHT:SQL:TYPE_NAME") >= 0 {
		t.Errorf("field b without a type name got one: %v", s.Field(1).Metadata)
	}
}
