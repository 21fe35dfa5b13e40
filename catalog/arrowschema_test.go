package catalog

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// typedSchema has one column of each primitive type the engine maps, some
// required and some nullable.
var typedSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "i", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 2, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 3, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 5, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 7, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 8, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 9, Name: "f", Type: iceberg.PrimitiveTypes.Float64, Required: true},
)

// typedBatches are appended in separate commits, so the table has one data
// file per batch.
var typedBatches = []string{
	`[{"i": 1, "l": 10, "s": "a", "d": "1.25", "dt": "2024-01-02", "ts": "2024-01-02T03:04:05", "tstz": "2024-01-02T03:04:05Z", "b": true, "f": 1.5},
	  {"i": 2, "l": null, "s": null, "d": null, "dt": null, "ts": null, "tstz": null, "b": null, "f": 2.5}]`,
	`[{"i": 3, "l": 30, "s": "ccc", "d": "-3.50", "dt": "1999-12-31", "ts": "1999-12-31T23:59:59.123456", "tstz": "1999-12-31T23:59:59Z", "b": false, "f": -0.5}]`,
	`[{"i": 4, "l": 40, "s": "dddd", "d": "99999999.99", "dt": "2038-01-19", "ts": "2038-01-19T03:14:08", "tstz": "2038-01-19T03:14:08Z", "b": true, "f": 1e300}]`,
}

// newLocalTable creates table name in a fresh embedded catalog.
func newLocalTable(t *testing.T, name string, schema *iceberg.Schema) (icecat.Catalog, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cat, _, err := OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecat.Closer).Close() })
	tbl, err := cat.CreateTable(ctx, table.Identifier{DefaultSchema, name}, schema)
	if err != nil {
		t.Fatal(err)
	}
	return cat, tbl
}

// appendJSON appends each JSON batch to tbl in its own commit and returns
// the table after the last one.
func appendJSON(t *testing.T, tbl *table.Table, batches ...string) *table.Table {
	t.Helper()
	ctx := context.Background()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, js := range batches {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		tbl, err = tbl.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// readSchemas reads every task of a scan built like the workers build it and
// returns the schema ReadTasks announced and those of the batches it gave.
func readSchemas(t *testing.T, tbl *table.Table, snapshotID int64, columns []string) (*arrow.Schema, []*arrow.Schema, int64) {
	t.Helper()
	ctx := context.Background()
	scan := tbl.Scan(ScanOptions(snapshotID, columns)...)
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc, seq, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		t.Fatal(err)
	}
	var got []*arrow.Schema
	var rows int64
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Schema())
		rows += rec.NumRows()
		rec.Release()
	}
	return sc, got, rows
}

func TestScanSchemaMatchesReadTasks(t *testing.T) {
	_, tbl := newLocalTable(t, "typed", typedSchema)
	empty, err := ScanSchema(tbl, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A table with no snapshot: ReadTasks of no task still announces a schema.
	announced, batches, _ := readSchemas(t, tbl, 0, nil)
	if !empty.Equal(announced) || len(batches) != 0 {
		t.Fatalf("no snapshot: ScanSchema\n%s\nReadTasks\n%s (%d batches)", empty, announced, len(batches))
	}

	tbl = appendJSON(t, tbl, typedBatches...)
	snap := tbl.CurrentSnapshot().SnapshotID
	for _, tc := range []struct {
		name    string
		snap    int64
		columns []string
	}{
		{"all current", 0, nil},
		{"all pinned", snap, nil},
		{"projected", snap, []string{"tstz", "i", "d"}},
		{"one nullable", snap, []string{"s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := ScanSchema(tbl, tc.snap, tc.columns)
			if err != nil {
				t.Fatal(err)
			}
			announced, batches, rows := readSchemas(t, tbl, tc.snap, tc.columns)
			if rows != 4 || len(batches) < 3 {
				t.Fatalf("read %d rows in %d batches, want 4 rows in >= 3", rows, len(batches))
			}
			if !want.Equal(announced) {
				t.Errorf("ScanSchema\n%s\nReadTasks announced\n%s", want, announced)
			}
			for i, b := range batches {
				if !want.Equal(b) {
					t.Errorf("batch %d schema\n%s\nwant\n%s", i, b, want)
				}
				// Field metadata and nullability are part of what DuckDB sees.
				for j, f := range b.Fields() {
					w := want.Field(j)
					if f.Nullable != w.Nullable || !f.Metadata.Equal(w.Metadata) {
						t.Errorf("batch %d field %s: nullable %v metadata %v, want %v %v", i, f.Name, f.Nullable, f.Metadata, w.Nullable, w.Metadata)
					}
				}
			}
			if len(tc.columns) == 0 && want.NumFields() != typedSchema.NumFields() {
				t.Errorf("all columns: got %d fields", want.NumFields())
			}
		})
	}
	got, err := ScanSchema(tbl, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		typ      arrow.DataType
		nullable bool
	}{
		{"i", arrow.PrimitiveTypes.Int32, false},
		{"l", arrow.PrimitiveTypes.Int64, true},
		{"s", arrow.BinaryTypes.String, true},
		{"d", &arrow.Decimal128Type{Precision: 10, Scale: 2}, true},
		{"dt", arrow.FixedWidthTypes.Date32, true},
		{"ts", &arrow.TimestampType{Unit: arrow.Microsecond}, true},
		{"tstz", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, true},
		{"b", arrow.FixedWidthTypes.Boolean, true},
		{"f", arrow.PrimitiveTypes.Float64, false},
	} {
		fs, ok := got.FieldsByName(c.name)
		if !ok || !arrow.TypeEqual(fs[0].Type, c.typ) || fs[0].Nullable != c.nullable {
			t.Errorf("column %s: got %v, want %s nullable=%v", c.name, fs, c.typ, c.nullable)
		}
	}
}

func TestScanSchemaErrors(t *testing.T) {
	_, tbl := newLocalTable(t, "typed", typedSchema)
	if _, err := ScanSchema(tbl, 0, []string{"nope"}); err == nil {
		t.Error("unknown column: want an error")
	}
	if _, err := ScanSchema(tbl, 12345, nil); err == nil {
		t.Error("unknown snapshot: want an error")
	}
}

func TestScanSchemaTimeTravel(t *testing.T) {
	ctx := context.Background()
	_, tbl := newLocalTable(t, "typed", typedSchema)
	tbl = appendJSON(t, tbl, typedBatches[0])
	old := tbl.CurrentSnapshot().SnapshotID
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendJSON(t, tbl, `[{"i": 9, "f": 9.5, "extra": "x"}]`)
	for _, tc := range []struct {
		snap   int64
		fields int
	}{{old, typedSchema.NumFields()}, {tbl.CurrentSnapshot().SnapshotID, typedSchema.NumFields() + 1}} {
		want, err := ScanSchema(tbl, tc.snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		announced, batches, _ := readSchemas(t, tbl, tc.snap, nil)
		if want.NumFields() != tc.fields || !want.Equal(announced) {
			t.Fatalf("snapshot %d: ScanSchema\n%s\nReadTasks\n%s", tc.snap, want, announced)
		}
		for _, b := range batches {
			if !want.Equal(b) {
				t.Fatalf("snapshot %d: batch\n%s\nwant\n%s", tc.snap, b, want)
			}
		}
	}
}
