package statement

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"
)

// TestWithFirstRowIDs: a worker's file, decoded from the wire as the
// coordinator receives it, is rebuilt with consecutive first_row_ids and
// keeps every other field — partition values of each logical kind and
// all column statistics — through another encode/decode (what the
// manifest writer sees).
func TestWithFirstRowIDs(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 3, Name: "amt", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 5, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 7, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "d", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "amt", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1002, Name: "ts_hour", Transform: iceberg.HourTransform{}},
		iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1003, Name: "ts", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1004, Name: "s_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
		iceberg.PartitionField{SourceIDs: []int{6}, FieldID: 1005, Name: "u", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1006, Name: "flag", Transform: iceberg.IdentityTransform{}},
	)
	meta, err := table.NewMetadata(schema, &spec, table.UnsortedSortOrder, "file:///tmp/t", iceberg.Properties{table.PropertyFormatVersion: "3"})
	if err != nil {
		t.Fatal(err)
	}
	spec = meta.PartitionSpec()
	partition := map[int]any{
		1000: iceberg.Date(19724),
		1001: iceberg.Decimal{Val: decimal128.FromI64(12345), Scale: 2},
		1002: int32(473400),
		1003: iceberg.Timestamp(1704067200123456),
		1004: "ab",
		1005: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		1006: true,
	}
	var files []iceberg.DataFile
	for i, count := range []int64{10, 25, 1} {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "file:///tmp/t/data/f"+string(rune('a'+i))+".parquet",
			iceberg.ParquetFile, partition, nil, nil, count, 1000+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		b.ColumnSizes(map[int]int64{1: 80, 5: 40}).ValueCounts(map[int]int64{1: count, 5: count}).
			NullValueCounts(map[int]int64{1: 0, 5: 1}).NaNValueCounts(map[int]int64{}).
			LowerBoundValues(map[int][]byte{1: {1, 0, 0, 0, 0, 0, 0, 0}, 5: []byte("ab")}).
			UpperBoundValues(map[int][]byte{1: {9, 0, 0, 0, 0, 0, 0, 0}, 5: []byte("az")}).
			SplitOffsets([]int64{4}).SortOrderID(0)
		wire, err := codec.EncodeDataFile(b.Build(), spec, schema, 3)
		if err != nil {
			t.Fatal(err)
		}
		df, err := codec.DecodeDataFile(wire, spec, schema, 3)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, df)
	}
	out, err := withFirstRowIDs(meta, files)
	if err != nil {
		t.Fatal(err)
	}
	next := meta.NextRowID()
	for i, df := range out {
		if id := df.FirstRowID(); id == nil || *id != next {
			t.Fatalf("file %d: first_row_id %v, want %d", i, id, next)
		}
		next += df.Count()
		// Through the wire again: what the manifest writer encodes.
		wire, err := codec.EncodeDataFile(df, spec, schema, 3)
		if err != nil {
			t.Fatal(err)
		}
		back, err := codec.DecodeDataFile(wire, spec, schema, 3)
		if err != nil {
			t.Fatal(err)
		}
		if id := back.FirstRowID(); id == nil || *id != *df.FirstRowID() {
			t.Fatalf("file %d: first_row_id lost in encoding: %v", i, id)
		}
		orig := files[i]
		for name, pair := range map[string][2]any{
			"path":      {orig.FilePath(), back.FilePath()},
			"format":    {orig.FileFormat(), back.FileFormat()},
			"partition": {orig.Partition(), back.Partition()},
			"count":     {orig.Count(), back.Count()},
			"size":      {orig.FileSizeBytes(), back.FileSizeBytes()},
			"sizes":     {orig.ColumnSizes(), back.ColumnSizes()},
			"values":    {orig.ValueCounts(), back.ValueCounts()},
			"nulls":     {orig.NullValueCounts(), back.NullValueCounts()},
			"nans":      {orig.NaNValueCounts(), back.NaNValueCounts()},
			"lower":     {orig.LowerBoundValues(), back.LowerBoundValues()},
			"upper":     {orig.UpperBoundValues(), back.UpperBoundValues()},
			"splits":    {orig.SplitOffsets(), back.SplitOffsets()},
			"sortOrder": {orig.SortOrderID(), back.SortOrderID()},
			"spec":      {orig.SpecID(), back.SpecID()},
			"content":   {orig.ContentType(), back.ContentType()},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("file %d: %s changed: %#v → %#v", i, name, pair[0], pair[1])
			}
		}
	}
	// A v2 table's files are left as they are.
	v2, err := table.NewMetadata(schema, &spec, table.UnsortedSortOrder, "file:///tmp/t", iceberg.Properties{table.PropertyFormatVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	same, err := withFirstRowIDs(v2, files)
	if err != nil || same[0] != files[0] {
		t.Fatalf("v2: files rebuilt (%v)", err)
	}
}
