package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// TestDirectFilesFooters: the checks that need a file's footer (seeded
// into the cache here): field ids present, strings annotated as UTF8, and
// no missing column that an identity partition would supply.
func TestDirectFilesFooters(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Options{Threads: 1, TempDir: t.TempDir(), ReadDirs: []string{"/wh"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	key, _ := wire.RandomKey()
	s, err := New(Options{Key: key, Engine: eng, Cache: catalog.NewMetadataCache(0)})
	if err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "region", Type: iceberg.PrimitiveTypes.String},
	)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	meta, err := table.NewMetadata(schema, &spec, table.UnsortedSortOrder, "file:///wh/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	task := func(path string) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(meta.PartitionSpec(), iceberg.EntryContentData, path, iceberg.ParquetFile,
			map[int]any{1000: "eu"}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		return table.FileScanTask{File: b.Build(), Length: 100}
	}
	s.opts.Cache.Remember(footerKey("/wh/ok.parquet"), map[int]string{1: "", 2: "UTF8", 3: "UTF8"})
	s.opts.Cache.Remember(footerKey("/wh/plain-bytes.parquet"), map[int]string{1: "", 2: "", 3: "UTF8"})
	s.opts.Cache.Remember(footerKey("/wh/no-region.parquet"), map[int]string{1: "", 2: "UTF8"})
	s.opts.Cache.Remember(footerKey("/wh/no-ids.parquet"), map[int]string(nil))
	for _, c := range []struct {
		file string
		cols []string
		ok   bool
	}{
		{"/wh/ok.parquet", nil, true},
		{"/wh/plain-bytes.parquet", []string{"id", "s"}, false},
		{"/wh/plain-bytes.parquet", []string{"id"}, true},
		{"/wh/no-region.parquet", []string{"id", "region"}, false},
		{"/wh/no-region.parquet", []string{"id", "s"}, true},
		{"/wh/no-ids.parquet", []string{"id"}, false},
	} {
		_, _, ok := s.directFiles(schema, meta, []table.FileScanTask{task(c.file)}, c.cols)
		if ok != c.ok {
			t.Errorf("%s %v: direct %v, want %v", c.file, c.cols, ok, c.ok)
		}
	}
}

// TestDirectViewEstimate: a direct view gives DuckDB's planner the files'
// record counts. With a schema map DuckDB binds read_parquet without
// opening a file and estimates 0 rows, which wrecks its join order (an
// 8-table join planned with a 10^12-row intermediate).
func TestDirectViewEstimate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	ids := func(id string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id}) }
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: ids("1")}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 1234 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(sch, []arrow.Array{col}, 1234)
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, TempDir: t.TempDir(), ReadDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	db, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 1234, 100)
	if err != nil {
		t.Fatal(err)
	}
	tasks := []table.FileScanTask{{File: db.Build(), Length: 100}}
	fields := []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}}
	if err := conn.Exec(ctx, directView("v", []string{path}, fields, tasks)); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.DB().QueryRowContext(ctx, "SELECT count(*) FROM v").Scan(&n); err != nil || n != 1234 {
		t.Fatalf("count: %d, %v", n, err)
	}
	var kind, plan string
	if err := conn.DB().QueryRowContext(ctx, "EXPLAIN SELECT id FROM v").Scan(&kind, &plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "~1,234 rows") {
		t.Fatalf("the plan does not estimate the file's 1234 rows:\n%s", plan)
	}
}
