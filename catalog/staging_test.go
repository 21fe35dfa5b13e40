package catalog

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
)

// TestStaging: staging tables are left out of a mount's listings, listed
// by Staging, and dropped by DropStaging once older than the grace.
func TestStaging(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	staging := StagingName("t")
	for _, name := range []string{"t", staging} {
		if _, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, name), sc); err != nil {
			t.Fatal(err)
		}
	}
	mt, err := m.Get(LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for id, err := range mt.Catalog.ListTables(ctx, icecat.ToIdentifier(DefaultSchema)) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, id[len(id)-1])
	}
	if !slices.Equal(listed, []string{"t"}) {
		t.Fatalf("listed %v, want only t", listed)
	}
	if st := m.Staging(ctx); len(st) != 1 || st[0].String() != "local.default."+staging {
		t.Fatalf("Staging: %v", st)
	}
	if got, err := m.DropStaging(ctx, time.Hour); len(got) != 0 || err != nil {
		t.Fatalf("dropped a fresh staging table: %v, %v", got, err)
	}
	if got, err := m.DropStaging(ctx, time.Nanosecond); len(got) != 1 || err != nil {
		t.Fatalf("DropStaging past the grace: %v, %v", got, err)
	}
	if st := m.Staging(ctx); len(st) != 0 {
		t.Fatalf("left: %v", st)
	}
	if ok, err := cat.CheckTableExists(ctx, icecat.ToIdentifier(DefaultSchema, "t")); err != nil || !ok {
		t.Fatalf("the table t: %v, %v", ok, err)
	}
}

// TestSweepStagingFolders: the folder of a staging table whose create
// wrote its metadata file but never its catalog entry is removed once
// older than the grace, an empty one silently; the folders of tables the catalog holds, a
// staging one among them, stay.
func TestSweepStagingFolders(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	var held []string
	for _, name := range []string{"t", StagingName("t")} {
		tbl, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, name), sc)
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := LocalPath(tbl.Metadata().Location())
		held = append(held, dir)
	}
	lost := filepath.Join(filepath.Dir(held[0]), StagingName("u"))
	if err := os.MkdirAll(filepath.Join(lost, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lost, "metadata", "00000-x.metadata.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(filepath.Dir(held[0]), StagingName("v"), "data")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := m.SweepStagingFolders(ctx, time.Hour); len(got) != 0 || err != nil {
		t.Fatalf("swept a fresh folder: %v, %v", got, err)
	}
	time.Sleep(10 * time.Millisecond)
	if got, err := m.SweepStagingFolders(ctx, time.Millisecond); !slices.Equal(got, []string{lost}) || err != nil {
		t.Fatalf("swept %v (%v), want only %s", got, err, lost)
	}
	for _, dir := range held {
		if _, err := os.Stat(filepath.Join(dir, "metadata")); err != nil {
			t.Fatalf("a held table's folder: %v", err)
		}
	}
	for _, dir := range []string{lost, filepath.Dir(empty)} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the folder %s: %v, want it removed", dir, err)
		}
	}
}

// TestDropStagingFinishesARename: a staging table that holds a commit
// while no table has its name (a replace killed between dropping the old
// table and renaming the new one) is renamed, not dropped; one whose
// name is taken is dropped.
func TestDropStagingFinishesARename(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	committed := func(name string) {
		tbl, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, name), sc)
		if err != nil {
			t.Fatal(err)
		}
		asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		defer at.Release()
		tx := tbl.NewTransaction()
		if err := tx.AppendTable(ctx, at, 1024, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	committed(StagingName("gone"))
	if _, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "taken"), sc); err != nil {
		t.Fatal(err)
	}
	committed(StagingName("taken"))
	time.Sleep(10 * time.Millisecond)
	got, err := m.DropStaging(ctx, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	finished := map[bool]int{}
	for _, st := range got {
		finished[st.Finished]++
	}
	if len(got) != 2 || finished[true] != 1 {
		t.Fatalf("DropStaging: %+v, want one renamed and one dropped", got)
	}
	tbl, err := cat.LoadTable(ctx, icecat.ToIdentifier(DefaultSchema, "gone"))
	if err != nil || tbl.CurrentSnapshot() == nil {
		t.Fatalf("the renamed table: %v", err)
	}
	if taken, err := cat.LoadTable(ctx, icecat.ToIdentifier(DefaultSchema, "taken")); err != nil || taken.CurrentSnapshot() != nil {
		t.Fatalf("the table whose name was taken: %v (it must stay as it was)", err)
	}
	if st := m.Staging(ctx); len(st) != 0 {
		t.Fatalf("left: %v", st)
	}
}
