package conform

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

// fromJSON is an array of type t with the values of a JSON list.
func fromJSON(t *testing.T, mem memory.Allocator, typ arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(mem, typ, strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s %s: %v", typ, js, err)
	}
	return arr
}

func jsonOf(t *testing.T, arr arrow.Array) string {
	t.Helper()
	b, err := json.Marshal(arr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStorableLayouts: every layout converts to its storable type with
// the same values, and the storable type is one iceberg-go makes a column
// of.
func TestStorableLayouts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	i32 := arrow.PrimitiveTypes.Int32
	utf8 := arrow.BinaryTypes.String
	cases := []struct {
		name string
		from arrow.Array
		want arrow.Array // in the storable type
	}{
		{"string_view", fromJSON(t, mem, arrow.BinaryTypes.StringView, `["a", null, "a string longer than twelve bytes", ""]`),
			fromJSON(t, mem, utf8, `["a", null, "a string longer than twelve bytes", ""]`)},
		{"binary_view", fromJSON(t, mem, arrow.BinaryTypes.BinaryView, `["AP8=", null, ""]`), fromJSON(t, mem, arrow.BinaryTypes.Binary, `["AP8=", null, ""]`)},
		{"large_string", fromJSON(t, mem, arrow.BinaryTypes.LargeString, `["x", null]`), fromJSON(t, mem, utf8, `["x", null]`)},
		{"list_view", fromJSON(t, mem, arrow.ListViewOf(i32), `[[1, 2], null, [], [3, null]]`), fromJSON(t, mem, arrow.ListOf(i32), `[[1, 2], null, [], [3, null]]`)},
		{"large_list_view", fromJSON(t, mem, arrow.LargeListViewOf(utf8), `[["a"], null]`), fromJSON(t, mem, arrow.ListOf(utf8), `[["a"], null]`)},
		{"fixed_size_list", fromJSON(t, mem, arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), `[[0.5, 1.5, 2.5], null, [1, null, 3]]`),
			fromJSON(t, mem, arrow.ListOf(arrow.PrimitiveTypes.Float32), `[[0.5, 1.5, 2.5], null, [1, null, 3]]`)},
		{"large_list", fromJSON(t, mem, arrow.LargeListOf(arrow.BinaryTypes.StringView), `[["a", "b"], []]`), fromJSON(t, mem, arrow.ListOf(utf8), `[["a", "b"], []]`)},
		{"dictionary", dictOf(t, mem, `[0, 1, 0, null]`, `["x", "y"]`), fromJSON(t, mem, utf8, `["x", "y", "x", null]`)},
		{"run_end_encoded", reeOf(t, mem, 5, `[2, 3, 5]`, `["a", null, "b"]`), fromJSON(t, mem, utf8, `["a", "a", null, "b", "b"]`)},
		{"decimal32", fromJSON(t, mem, &arrow.Decimal32Type{Precision: 5, Scale: 2}, `["123.45", null, "-0.01"]`),
			fromJSON(t, mem, &arrow.Decimal128Type{Precision: 5, Scale: 2}, `["123.45", null, "-0.01"]`)},
		{"decimal64", fromJSON(t, mem, &arrow.Decimal64Type{Precision: 18, Scale: 3}, `["123456789012345.678"]`),
			fromJSON(t, mem, &arrow.Decimal128Type{Precision: 18, Scale: 3}, `["123456789012345.678"]`)},
		{"decimal256", fromJSON(t, mem, &arrow.Decimal256Type{Precision: 38, Scale: 0}, `["99999999999999999999999999999999999999", null]`),
			fromJSON(t, mem, &arrow.Decimal128Type{Precision: 38, Scale: 0}, `["99999999999999999999999999999999999999", null]`)},
		{"uint32", fromJSON(t, mem, arrow.PrimitiveTypes.Uint32, `[4294967295, null]`), fromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[4294967295, null]`)},
		{"int8", fromJSON(t, mem, arrow.PrimitiveTypes.Int8, `[-128, 127]`), fromJSON(t, mem, i32, `[-128, 127]`)},
		{"date64", fromJSON(t, mem, arrow.FixedWidthTypes.Date64, `["2024-02-29", null]`), fromJSON(t, mem, arrow.FixedWidthTypes.Date32, `["2024-02-29", null]`)},
		{"time32_ms", fromJSON(t, mem, arrow.FixedWidthTypes.Time32ms, `["13:14:15.125"]`), fromJSON(t, mem, arrow.FixedWidthTypes.Time64us, `["13:14:15.125"]`)},
		{"timestamp_ms_tz", fromJSON(t, mem, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}, `["2024-03-10T07:00:00.125Z"]`),
			fromJSON(t, mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, `["2024-03-10T07:00:00.125Z"]`)},
		{"struct", fromJSON(t, mem, arrow.StructOf(arrow.Field{Name: "s", Type: arrow.BinaryTypes.StringView, Nullable: true},
			arrow.Field{Name: "l", Type: arrow.FixedSizeListOf(2, i32), Nullable: true}), `[{"s": "a", "l": [1, 2]}, null, {"s": null, "l": null}]`),
			fromJSON(t, mem, arrow.StructOf(arrow.Field{Name: "s", Type: utf8, Nullable: true}, arrow.Field{Name: "l", Type: arrow.ListOf(i32), Nullable: true}),
				`[{"s": "a", "l": [1, 2]}, null, {"s": null, "l": null}]`)},
		{"map", fromJSON(t, mem, arrow.MapOf(arrow.BinaryTypes.LargeString, arrow.FixedSizeListOf(1, i32)), `[[{"key": "a", "value": [1]}], null]`),
			fromJSON(t, mem, arrow.MapOf(utf8, arrow.ListOf(i32)), `[[{"key": "a", "value": [1]}], null]`)},
		{"json", jsonExt(t, mem, `["{\"a\": 1}", null]`), fromJSON(t, mem, utf8, `["{\"a\": 1}", null]`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer c.from.Release()
			defer c.want.Release()
			typ, err := StorableType(c.from.DataType(), "c")
			if err != nil {
				t.Fatal(err)
			}
			if !arrow.TypeEqual(typ, c.want.DataType()) {
				t.Fatalf("storable type %s, want %s", typ, c.want.DataType())
			}
			sc := arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ, Nullable: true}}, nil)
			if _, err := table.ArrowSchemaToIcebergWithFreshIDs(sc, true); err != nil {
				t.Fatalf("iceberg-go takes no %s: %v", typ, err)
			}
			// Sliced input too: offsets of every layout.
			for _, from := range []arrow.Array{c.from, array.NewSlice(c.from, 1, int64(c.from.Len()))} {
				want := c.want
				if from != c.from {
					defer from.Release()
					want = array.NewSlice(c.want, 1, int64(c.want.Len()))
					defer want.Release()
				}
				got, err := Storable(ctx, mem, from, "c")
				if err != nil {
					t.Fatal(err)
				}
				if !arrow.TypeEqual(got.DataType(), typ) {
					t.Errorf("converted to %s, want %s", got.DataType(), typ)
				}
				if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
					t.Errorf("values %s, want %s", g, w)
				}
				got.Release()
			}
		})
	}
}

func dictOf(t *testing.T, mem memory.Allocator, indices, values string) arrow.Array {
	idx := fromJSON(t, mem, arrow.PrimitiveTypes.Int8, indices)
	defer idx.Release()
	dict := fromJSON(t, mem, arrow.BinaryTypes.String, values)
	defer dict.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, idx, dict)
}

func reeOf(t *testing.T, mem memory.Allocator, n int, ends, values string) arrow.Array {
	e := fromJSON(t, mem, arrow.PrimitiveTypes.Int32, ends)
	defer e.Release()
	v := fromJSON(t, mem, arrow.BinaryTypes.String, values)
	defer v.Release()
	return array.NewRunEndEncodedArray(e, v, n, 0)
}

func jsonExt(t *testing.T, mem memory.Allocator, values string) arrow.Array {
	s := fromJSON(t, mem, arrow.BinaryTypes.String, values)
	defer s.Release()
	typ, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	return array.NewExtensionArrayWithStorage(typ, s)
}

// TestStorableRefusals: types Iceberg has no type for, and values the
// storable layout cannot hold exactly, fail naming the column.
func TestStorableRefusals(t *testing.T) {
	for _, typ := range []arrow.DataType{
		arrow.FixedWidthTypes.Duration_ms, arrow.FixedWidthTypes.MonthDayNanoInterval, arrow.FixedWidthTypes.DayTimeInterval,
		&arrow.Decimal256Type{Precision: 40, Scale: 0},
		arrow.SparseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, []arrow.UnionTypeCode{0}),
		arrow.ListOf(arrow.FixedWidthTypes.Duration_s),
		arrow.StructOf(arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.MonthInterval}),
	} {
		if _, err := StorableType(typ, "c"); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "column c") {
			t.Errorf("%s: %v", typ, err)
		}
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "z", Type: arrow.ListOf(arrow.Null)}}, nil)
	if _, err := StorableSchema(sc); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "z.element") {
		t.Errorf("list of null: %v", err)
	}
	md := arrow.NewMetadata([]string{"ARROW:extension:name"}, []string{"arrow.fixed_shape_tensor"})
	sc = arrow.NewSchema([]arrow.Field{{Name: "e", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Metadata: md}}, nil)
	if err := UnknownExtensions(sc); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "fixed_shape_tensor") {
		t.Errorf("unknown extension: %v", err)
	}
	mem := memory.DefaultAllocator
	for _, c := range []struct {
		typ arrow.DataType
		js  string
	}{
		{arrow.PrimitiveTypes.Uint64, `[9223372036854775808]`},
		{arrow.FixedWidthTypes.Time64ns, `[1]`},
		{arrow.ListOf(arrow.PrimitiveTypes.Uint64), `[[18446744073709551615]]`},
	} {
		arr := fromJSON(t, mem, c.typ, c.js)
		if _, err := Storable(context.Background(), mem, arr, "c"); !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), "column c") {
			t.Errorf("%s %s: %v", c.typ, c.js, err)
		}
		arr.Release()
	}
}
