package conform

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// column builds a one-column array of typ from JSON.
func column(t *testing.T, typ arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(memory.DefaultAllocator, typ, strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s %s: %v", typ, js, err)
	}
	return arr
}

func TestValidate(t *testing.T) {
	tsUS := &arrow.TimestampType{Unit: arrow.Microsecond}
	tstz := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	bad := "a\xffb"
	binStr := func(vals ...string) arrow.Array { // strings JSON cannot hold
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	ok := []arrow.Array{
		column(t, arrow.FixedWidthTypes.Date32, `["0001-01-01", "9999-12-31", null]`),
		column(t, tsUS, `["0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", null]`),
		column(t, tstz, `["1970-01-01T00:00:00Z"]`),
		column(t, arrow.FixedWidthTypes.Time64us, `["00:00:00", "23:59:59.999999"]`),
		binStr("héllo", "", "\x00"),
	}
	for _, a := range ok {
		if err := Validate(a, "c", 0); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	dateOf := func(v int32) arrow.Array {
		b := array.NewDate32Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]arrow.Date32{0, arrow.Date32(v)}, nil)
		return b.NewArray()
	}
	tsOf := func(v int64) arrow.Array {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, tsUS)
		defer b.Release()
		b.AppendValues([]arrow.Timestamp{0, arrow.Timestamp(v)}, nil)
		return b.NewArray()
	}
	timeOf := func(v int64) arrow.Array {
		b := array.NewTime64Builder(memory.DefaultAllocator, &arrow.Time64Type{Unit: arrow.Microsecond})
		defer b.Release()
		b.AppendValues([]arrow.Time64{0, arrow.Time64(v)}, nil)
		return b.NewArray()
	}
	listOf := func(vals ...string) arrow.Array {
		b := array.NewListBuilder(memory.DefaultAllocator, arrow.BinaryTypes.String)
		defer b.Release()
		vb := b.ValueBuilder().(*array.StringBuilder)
		b.Append(true)
		vb.Append("x")
		b.AppendNull()
		b.Append(true)
		vb.AppendValues(vals, nil)
		return b.NewArray()
	}
	mapOf := func(k, v string) arrow.Array {
		b := array.NewMapBuilder(memory.DefaultAllocator, arrow.BinaryTypes.String, arrow.BinaryTypes.String, false)
		defer b.Release()
		b.Append(true)
		b.KeyBuilder().(*array.StringBuilder).Append("k")
		b.ItemBuilder().(*array.StringBuilder).Append("v")
		b.Append(true)
		b.KeyBuilder().(*array.StringBuilder).Append(k)
		b.ItemBuilder().(*array.StringBuilder).Append(v)
		return b.NewArray()
	}
	structOf := func(s string, valid bool) arrow.Array {
		st := arrow.StructOf(arrow.Field{Name: "f", Type: arrow.BinaryTypes.String, Nullable: true})
		b := array.NewStructBuilder(memory.DefaultAllocator, st)
		defer b.Release()
		b.Append(true)
		b.FieldBuilder(0).(*array.StringBuilder).Append("ok")
		b.Append(valid)
		b.FieldBuilder(0).(*array.StringBuilder).Append(s)
		return b.NewArray()
	}
	cases := []struct {
		arr        arrow.Array
		path, text string
	}{
		{binStr("ok", bad), "c", "not valid UTF-8"},
		{dateOf(math.MaxInt32), "c", "'infinity'"},
		{dateOf(-math.MaxInt32), "c", "'-infinity'"},
		{dateOf(2932897), "c", "10000-01-01"},
		{dateOf(-719163), "c", "0000-12-31"},
		{tsOf(math.MaxInt64), "c", "'infinity'"},
		{tsOf(-math.MaxInt64), "c", "'-infinity'"},
		{tsOf(253402300800000000), "c", "10000-01-01 00:00:00"},
		{timeOf(86400e6), "c", "not a time of day"},
		{listOf("y", bad), "c.element", "not valid UTF-8"}, // row 43, below
		{mapOf(bad, "v"), "c.key", "not valid UTF-8"},
		{mapOf("k", bad), "c.value", "not valid UTF-8"},
		{structOf(bad, true), "c.f", "not valid UTF-8"},
	}
	for _, c := range cases {
		row := "42" // the second of the array's values
		if c.path == "c.element" {
			row = "43" // the third list
		}
		err := Validate(c.arr, "c", 40)
		if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), "column "+c.path+", row "+row) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v, want ErrValue naming column %s, row %s and %q", c.arr, err, c.path, row, c.text)
		}
	}
	// A NULL struct's fields are not stored, whatever they hold.
	if err := Validate(structOf(bad, false), "c", 0); err != nil {
		t.Errorf("NULL struct: %v", err)
	}
	if err := Validate(listOf("fine"), "c", 0); err != nil {
		t.Errorf("list: %v", err)
	}
}

// BenchmarkValidateStrings measures the check every written string column
// goes through, against copying the same column (a reference measured in
// the same run): the ratio of the two ns/op is the cost.
func BenchmarkValidateStrings(b *testing.B) {
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < 1<<16; i++ {
		sb.Append("customer#000012345 — ünïcode and ascii text of a typical length")
	}
	arr := sb.NewStringArray()
	sb.Release()
	defer arr.Release()
	bytes := int64(len(arr.ValueBytes()))
	b.Run("validate", func(b *testing.B) {
		b.SetBytes(bytes)
		b.ReportAllocs()
		for range b.N {
			if err := Validate(arr, "c", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy-reference", func(b *testing.B) {
		b.SetBytes(bytes)
		b.ReportAllocs()
		buf := make([]byte, bytes)
		for range b.N {
			copy(buf, arr.ValueBytes())
		}
	})
}
