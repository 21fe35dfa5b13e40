package partstats

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestKeyOfDistinct: partitions that differ have different keys, however
// their values read as text: NULL and the string 'null', values holding
// the separator, an empty string, and NULL against an empty string.
func TestKeyOfDistinct(t *testing.T) {
	ptype := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 1000, Name: "a", Type: iceberg.PrimitiveTypes.String},
		{ID: 1001, Name: "b", Type: iceberg.PrimitiveTypes.String},
	}}
	parts := []map[int]any{
		{1000: nil, 1001: "x"},
		{1000: "null", 1001: "x"},
		{1000: "", 1001: "x"},
		{1000: "a|b", 1001: "c"},
		{1000: "a", 1001: "b|c"},
		{1000: "a|1:b", 1001: nil},
		{1000: "a", 1001: "1:b"},
		{1000: "-", 1001: nil},
		{1000: nil, 1001: nil},
	}
	seen := map[string]int{}
	for i, p := range parts {
		key, err := KeyOf(ptype, 0, p)
		if err != nil {
			t.Fatal(err)
		}
		if j, dup := seen[key]; dup {
			t.Errorf("partitions %v and %v share the key %q", parts[j], p, key)
		}
		seen[key] = i
		again, err := KeyOf(ptype, 0, p)
		if err != nil || again != key {
			t.Errorf("key of %v: %q, then %q (%v)", p, key, again, err)
		}
	}
	// The spec is part of the key.
	k0, _ := KeyOf(ptype, 0, parts[0])
	k1, _ := KeyOf(ptype, 1, parts[0])
	if k0 == k1 {
		t.Errorf("specs 0 and 1 share the key %q", k0)
	}
}

// TestFileKeysMatchKeyOf: the key a row read back from a statistics file
// gets (keyAt over the file's partition column) is KeyOf of the
// partition it was written for, so a NULL partition and a 'null' one
// keep their own rows.
func TestFileKeysMatchKeyOf(t *testing.T) {
	ptype := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 1000, Name: "s", Type: iceberg.PrimitiveTypes.String},
		{ID: 1001, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	}}
	rows := []Row{
		{Partition: map[int]any{1000: nil, 1001: int32(1)}, DataRecords: 1},
		{Partition: map[int]any{1000: "null", 1001: int32(1)}, DataRecords: 2},
		{Partition: map[int]any{1000: "1|2", 1001: nil}, DataRecords: 3},
		{Partition: map[int]any{1000: "1", 1001: int32(2)}, DataRecords: 4},
	}
	sc, err := table.SchemaToArrowSchema(fileSchema(ptype), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record(sc, ptype, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	part := rec.Column(0).(*array.Struct)
	seen := map[string]bool{}
	for i, r := range rows {
		want, err := KeyOf(ptype, 0, r.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if got := keyAt(0, part, i); got != want {
			t.Errorf("row %d: key read back %q, KeyOf %q", i, got, want)
		}
		if seen[want] {
			t.Errorf("row %d (%v) shares key %q", i, r.Partition, want)
		}
		seen[want] = true
	}
}
