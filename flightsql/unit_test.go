package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"%", "", true},
		{"%", "anything", true},
		{"", "", true},
		{"", "a", false},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a_c", "abc", true},
		{"a_c", "ac", false},
		{`a\_c`, "a_c", true},
		{`a\_c`, "abc", false},
		{`a\%`, "a%", true},
		{`a\%`, "ab", false},
		{`a\\b`, `a\b`, true},
		{"a%c", "abbbc", true},
		{"a%c", "abbb", false},
		{"%b%", "abc", true},
		{"%x%", "abc", false},
		{"a%b%c", "aXbYc", true},
		{"a%b%c", "aXcYb", false},
		{"_", "é", true},
		{"__", "é", false},
		{"Sales", "sales", false},
		{`a\`, `a\`, true},
	} {
		if got := likeMatch(c.p, c.s); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.p, got, c.want)
		}
	}
}

func TestTypeName(t *testing.T) {
	for _, c := range []struct {
		t    iceberg.Type
		want string
	}{
		{iceberg.PrimitiveTypes.Bool, "BOOLEAN"},
		{iceberg.PrimitiveTypes.Int32, "INTEGER"},
		{iceberg.PrimitiveTypes.Int64, "BIGINT"},
		{iceberg.PrimitiveTypes.Float32, "FLOAT"},
		{iceberg.PrimitiveTypes.Float64, "DOUBLE"},
		{iceberg.DecimalTypeOf(38, 0), "DECIMAL(38,0)"},
		{iceberg.PrimitiveTypes.Date, "DATE"},
		{iceberg.PrimitiveTypes.Time, "TIME"},
		{iceberg.PrimitiveTypes.Timestamp, "TIMESTAMP"},
		{iceberg.PrimitiveTypes.TimestampTz, "TIMESTAMP WITH TIME ZONE"},
		{iceberg.PrimitiveTypes.TimestampNs, "TIMESTAMP_NS"},
		{iceberg.PrimitiveTypes.String, "VARCHAR"},
		{iceberg.PrimitiveTypes.UUID, "UUID"},
		{iceberg.PrimitiveTypes.Binary, "BLOB"},
		{iceberg.FixedTypeOf(16), "BLOB"},
		{&iceberg.ListType{ElementID: 2, Element: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.Int32}}, "INTEGER[][]"},
		{&iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.String, ValueID: 3, ValueType: iceberg.PrimitiveTypes.Int64}, "MAP(VARCHAR, BIGINT)"},
		{&iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 2, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 3, Name: `we"ird`, Type: iceberg.PrimitiveTypes.String},
		}}, `STRUCT(a INTEGER, "we""ird" VARCHAR)`},
	} {
		if got := TypeName(c.t); got != c.want {
			t.Errorf("TypeName(%s) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{PreparedTTL: -1}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Backend", "Mounts", "Key", "PreparedTTL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
