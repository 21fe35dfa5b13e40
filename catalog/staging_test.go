package catalog

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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
	if got := m.DropStaging(ctx, time.Hour); len(got) != 0 {
		t.Fatalf("dropped a fresh staging table: %v", got)
	}
	if got := m.DropStaging(ctx, time.Nanosecond); len(got) != 1 {
		t.Fatalf("DropStaging past the grace: %v", got)
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
		dir, _ := localFolder(tbl.Metadata().Location())
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
	if got := m.SweepStagingFolders(ctx, time.Hour); len(got) != 0 {
		t.Fatalf("swept a fresh folder: %v", got)
	}
	time.Sleep(10 * time.Millisecond)
	if got := m.SweepStagingFolders(ctx, time.Millisecond); !slices.Equal(got, []string{lost}) {
		t.Fatalf("swept %v, want only %s", got, lost)
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
