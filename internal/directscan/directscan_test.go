package directscan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func dataFile(t *testing.T, path string, format iceberg.FileFormat, size int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, format, nil, nil, nil, 10, size)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// TestFiles: only whole, local, readable Parquet files without delete
// files of any kind, each once, qualify.
func TestFiles(t *testing.T) {
	canRead := func(p string) bool { return strings.HasPrefix(p, "/wh/") }
	whole := func(path string) table.FileScanTask {
		return table.FileScanTask{File: dataFile(t, path, iceberg.ParquetFile, 100), Length: 100}
	}
	if paths, ok := Files([]table.FileScanTask{whole("file:///wh/a.parquet"), whole("/wh/b.parquet")}, canRead); !ok ||
		strings.Join(paths, ",") != "/wh/a.parquet,/wh/b.parquet" {
		t.Fatalf("plain files: %v %v", paths, ok)
	}
	del := whole("/wh/c.parquet")
	del.DeleteFiles = []iceberg.DataFile{dataFile(t, "/wh/d.parquet", iceberg.ParquetFile, 10)}
	dv := whole("/wh/c.parquet")
	dv.DeletionVectorFiles = []iceberg.DataFile{dataFile(t, "/wh/d.puffin", iceberg.ParquetFile, 10)}
	eq := whole("/wh/c.parquet")
	eq.EqualityDeleteFiles = []iceberg.DataFile{dataFile(t, "/wh/e.parquet", iceberg.ParquetFile, 10)}
	split := whole("/wh/c.parquet")
	split.Length = 50
	offset := whole("/wh/c.parquet")
	offset.Start = 4
	for name, tasks := range map[string][]table.FileScanTask{
		"positional deletes": {del},
		"deletion vector":    {dv},
		"equality deletes":   {eq},
		"part of a file":     {split},
		"offset":             {offset},
		"twice":              {whole("/wh/a.parquet"), whole("/wh/a.parquet")},
		"avro":               {{File: dataFile(t, "/wh/a.avro", iceberg.AvroFile, 100), Length: 100}},
		"object store":       {whole("s3://bucket/wh/a.parquet")},
		"other host":         {whole("file://host/wh/a.parquet")},
		"not allowed":        {whole("/elsewhere/a.parquet")},
		"glob":               {whole("/wh/*.parquet")},
		"quote":              {whole("/wh/it's.parquet")},
		"none":               nil,
	} {
		if paths, ok := Files(tasks, canRead); ok {
			t.Errorf("%s: qualified (%v)", name, paths)
		}
	}
}

// TestFields: top-level columns of the handled types qualify, by name;
// nested, uuid, time, fixed and unknown columns do not.
func TestFields(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "amt", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 4, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 5, Name: "l", Type: &iceberg.ListType{ElementID: 6, Element: iceberg.PrimitiveTypes.Int32}},
	)
	fields, ok := Fields(schema, []string{"ts", "id", "amt"})
	if !ok || len(fields) != 3 || fields[0].ID != 3 || fields[2].ID != 2 {
		t.Fatalf("fields %v %v", fields, ok)
	}
	if typ, _ := DuckType(fields[2].Type); typ != "DECIMAL(12,2)" {
		t.Fatalf("decimal: %s", typ)
	}
	for _, cols := range [][]string{nil, {"u"}, {"l"}, {"id", "_row_id"}, {"missing"}} {
		if _, ok := Fields(schema, cols); ok {
			t.Errorf("%v qualified", cols)
		}
	}
}

// TestMayHoldNaN: a float or double column may hold NaN unless every
// file says it has none.
func TestMayHoldNaN(t *testing.T) {
	file := func(nans map[int]int64) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "/wh/f.parquet", iceberg.ParquetFile, nil, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		if nans != nil {
			b.NaNValueCounts(nans)
		}
		return table.FileScanTask{File: b.Build(), Length: 100}
	}
	f := iceberg.NestedField{ID: 2, Name: "f", Type: iceberg.PrimitiveTypes.Float64}
	g := iceberg.NestedField{ID: 3, Name: "g", Type: iceberg.PrimitiveTypes.Float32}
	id := iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}
	for _, c := range []struct {
		name   string
		tasks  []table.FileScanTask
		fields []iceberg.NestedField
		want   bool
	}{
		{"no float column", []table.FileScanTask{file(nil)}, []iceberg.NestedField{id}, false},
		{"counted none", []table.FileScanTask{file(map[int]int64{2: 0, 3: 0})}, []iceberg.NestedField{id, f, g}, false},
		{"counted one", []table.FileScanTask{file(map[int]int64{2: 0}), file(map[int]int64{2: 1})}, []iceberg.NestedField{f}, true},
		{"not counted", []table.FileScanTask{file(map[int]int64{2: 0}), file(nil)}, []iceberg.NestedField{f}, true},
		{"float not counted", []table.FileScanTask{file(map[int]int64{2: 0})}, []iceberg.NestedField{f, g}, true},
	} {
		if got := MayHoldNaN(c.tasks, c.fields); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCoalesce: the consecutive ranges that cover a readable Parquet file
// become one whole-file task; a file missing a range, with deletes, or not
// readable in place keeps its ranges, and the order stays.
func TestCoalesce(t *testing.T) {
	readable := func(p string) bool { return strings.HasPrefix(p, "/wh/") }
	ranges := func(path string, size int64, bounds ...int64) []table.FileScanTask {
		f := dataFile(t, path, iceberg.ParquetFile, size)
		var out []table.FileScanTask
		for i := 0; i+1 < len(bounds); i++ {
			out = append(out, table.FileScanTask{File: f, Start: bounds[i], Length: bounds[i+1] - bounds[i]})
		}
		return out
	}
	show := func(tasks []table.FileScanTask) string {
		var b strings.Builder
		for _, x := range tasks {
			fmt.Fprintf(&b, "%s[%d+%d] ", x.File.FilePath(), x.Start, x.Length)
		}
		return strings.TrimSpace(b.String())
	}
	withDeletes := ranges("/wh/d.parquet", 300, 0, 100, 300)
	for i := range withDeletes {
		withDeletes[i].DeleteFiles = []iceberg.DataFile{dataFile(t, "/wh/del.parquet", iceberg.ParquetFile, 10)}
	}
	for _, c := range []struct {
		name  string
		tasks []table.FileScanTask
		want  string
	}{
		{"split", ranges("/wh/a.parquet", 300, 0, 100, 200, 300), "/wh/a.parquet[0+300]"},
		{"whole already", ranges("/wh/a.parquet", 300, 0, 300), "/wh/a.parquet[0+300]"},
		{"a range missing", ranges("/wh/a.parquet", 300, 0, 100, 200), "/wh/a.parquet[0+100] /wh/a.parquet[100+100]"},
		{"not from the start", ranges("/wh/a.parquet", 300, 100, 200, 300), "/wh/a.parquet[100+100] /wh/a.parquet[200+100]"},
		{"not readable in place", ranges("s3://b/a.parquet", 300, 0, 150, 300), "s3://b/a.parquet[0+150] s3://b/a.parquet[150+150]"},
		{"deletes", withDeletes, "/wh/d.parquet[0+100] /wh/d.parquet[100+200]"},
		{"mixed, in order", slices.Concat(ranges("s3://b/x.parquet", 300, 0, 150, 300), ranges("/wh/a.parquet", 300, 0, 100, 300),
			ranges("/wh/b.parquet", 50, 0, 50), ranges("/wh/c.parquet", 200, 0, 100, 200)),
			"s3://b/x.parquet[0+150] s3://b/x.parquet[150+150] /wh/a.parquet[0+300] /wh/b.parquet[0+50] /wh/c.parquet[0+200]"},
	} {
		if got := show(Coalesce(c.tasks, readable)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}
