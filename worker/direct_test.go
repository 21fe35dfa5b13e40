package worker

import (
	"context"
	"testing"

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
	s.footers.Add("/wh/ok.parquet", map[int]string{1: "", 2: "UTF8", 3: "UTF8"})
	s.footers.Add("/wh/plain-bytes.parquet", map[int]string{1: "", 2: "", 3: "UTF8"})
	s.footers.Add("/wh/no-region.parquet", map[int]string{1: "", 2: "UTF8"})
	s.footers.Add("/wh/no-ids.parquet", nil)
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
