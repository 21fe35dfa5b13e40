package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

var idSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})

// appendRows commits ids to tbl and returns the table as committed.
func appendRows(t *testing.T, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dataFiles are the live data files of tbl's current snapshot.
func dataFiles(t *testing.T, tbl *table.Table) []iceberg.DataFile {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, m := range mans {
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out = append(out, e.DataFile())
		}
	}
	return out
}

// rowCount reads every row of the table ident of cat.
func rowCount(t *testing.T, cat icecat.Catalog, ident table.Identifier) int64 {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("read %v: %v", ident, err)
	}
	defer at.Release()
	return at.NumRows()
}

// stagingSharingFiles makes what a coordinator of an earlier version
// left when it was killed between a CREATE OR REPLACE's commit and its
// drop of the staging table: a staging table whose data files (in its
// folder) the replaced table t also holds. It returns the staging
// table's name and folder.
func stagingSharingFiles(t *testing.T, cat icecat.Catalog) (string, string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "t"), idSchema)
	if err != nil {
		t.Fatal(err)
	}
	name := StagingName("t")
	st, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, name), idSchema)
	if err != nil {
		t.Fatal(err)
	}
	st = appendRows(t, st, 1, 2, 3)
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, dataFiles(t, st), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	dir, _ := LocalPath(st.Location())
	return name, dir
}

// TestDropStagingKeepsFilesAnotherTableHolds: a staging table whose
// files another table holds is dropped at start-up with only the files
// no table references (its own metadata); the other table keeps every
// row.
func TestDropStagingKeepsFilesAnotherTableHolds(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	name, dir := stagingSharingFiles(t, cat)
	time.Sleep(10 * time.Millisecond)
	got, err := m.DropStaging(ctx, time.Millisecond)
	if err != nil || len(got) != 1 || got[0].Ident[1] != name || got[0].Finished {
		t.Fatalf("DropStaging: %v, %v", got, err)
	}
	if n := rowCount(t, cat, icecat.ToIdentifier(DefaultSchema, "t")); n != 3 {
		t.Fatalf("t has %d rows after the staging table was dropped, want 3", n)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "metadata", "*.metadata.json"))
	if len(left) != 0 {
		t.Fatalf("the staging table's metadata files stay: %v", left)
	}
	if ok, _ := cat.CheckTableExists(ctx, icecat.ToIdentifier(DefaultSchema, name)); ok {
		t.Fatal("the staging table stays")
	}
}

// TestSweepKeepsFolderAnotherTableHolds: a staging folder without a
// catalog entry (the staging table of a finished replace of an earlier
// version, dropped) whose data files a table holds is not removed; a
// folder named as icefloe names a table's own location and holding only
// a first metadata file (a create killed before its catalog entry) is,
// one holding a data file too is not.
func TestSweepKeepsFolderAnotherTableHolds(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	name, dir := stagingSharingFiles(t, cat)
	if err := cat.DropTable(ctx, icecat.ToIdentifier(DefaultSchema, name)); err != nil {
		t.Fatal(err)
	}
	db := filepath.Dir(dir)
	lost := filepath.Join(db, "u-0123456789abcdef0123456789abcdef")
	kept := filepath.Join(db, "v-0123456789abcdef0123456789abcdef")
	for _, f := range []string{
		filepath.Join(lost, "metadata", "00000-x.metadata.json"),
		filepath.Join(kept, "metadata", "00000-x.metadata.json"),
		filepath.Join(kept, "data", "00000-0-x.parquet"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	got, err := m.SweepStagingFolders(ctx, time.Millisecond)
	if err != nil || !slices.Equal(got, []string{lost}) {
		t.Fatalf("swept %v (%v), want only %s", got, err, lost)
	}
	if n := rowCount(t, cat, icecat.ToIdentifier(DefaultSchema, "t")); n != 3 {
		t.Fatalf("t has %d rows after the sweep, want 3", n)
	}
	if _, err := os.Stat(filepath.Join(kept, "data", "00000-0-x.parquet")); err != nil {
		t.Fatalf("a folder holding a data file: %v", err)
	}
}

// TestOwnersFree: a location is free only when it is, holds and lies in
// no place of another table or view, and is and holds no schema folder
// or warehouse.
func TestOwnersFree(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	mt, err := m.Get(LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := LocalPath(mt.Props["warehouse"])
	db := filepath.Join(wh, DefaultSchema+".db")
	t1, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "t1"), idSchema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "t2"), idSchema,
		icecat.WithProperties(iceberg.Properties{WriteDataPathKey: "file://" + wh + "/elsewhere/t2data"})); err != nil {
		t.Fatal(err)
	}
	views, err := mt.Views()
	if err != nil {
		t.Fatal(err)
	}
	if err := views.CreateView(ctx, icecat.ToIdentifier(DefaultSchema, "v"), idSchema, "SELECT 1 AS id"); err != nil {
		t.Fatal(err)
	}
	o, err := m.Owners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loc1, _ := LocalPath(t1.Location())
	for _, c := range []struct {
		loc  string
		free bool
	}{
		{loc1, false}, {"file://" + loc1, false}, {loc1 + "/sub", false}, {loc1 + "/../t1", false},
		{db, false}, {wh, false}, {filepath.Dir(wh), false},
		{wh + "/elsewhere", false}, {wh + "/elsewhere/t2data/x", false},
		{db + "/v", false},
		{db + "/new-x", true}, {wh + "/other/x", true}, {loc1 + "-2", true},
	} {
		err := o.Free([]string{c.loc}, nil)
		if (err == nil) != c.free || err != nil && !errors.Is(err, ErrTaken) {
			t.Errorf("Free(%s) = %v, want free %v", c.loc, err, c.free)
		}
	}
	self := func(ow Owner) bool { return ow.Is(LocalCatalogName, icecat.ToIdentifier(DefaultSchema, "t1")) }
	if err := o.Free([]string{loc1}, self); err != nil {
		t.Errorf("t1's own location, t1 aside: %v", err)
	}
	if err := o.Free([]string{loc1}, self); err != nil && strings.Contains(err.Error(), "t1") {
		t.Errorf("the message names the other table: %v", err)
	}
}

// TestUnreferenced: a file a table references, under any spelling of
// its location (file:// or a path, through a symbolic link to its
// folder), is referenced; skipping that table leaves it unreferenced.
func TestUnreferenced(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	tbl, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "t"), idSchema)
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 1, 2)
	ref := dataFiles(t, tbl)[0].FilePath()
	path, _ := LocalPath(ref)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(path), link); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(filepath.Dir(path), "stray.parquet")
	if err := os.WriteFile(stray, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{ref, path, filepath.Join(link, filepath.Base(path)), "file://" + stray, tbl.MetadataLocation()}
	got, err := m.Unreferenced(ctx, files, nil)
	if err != nil || !slices.Equal(got, []string{"file://" + stray}) {
		t.Fatalf("Unreferenced: %v, %v; want only the stray file", got, err)
	}
	got, err = m.Unreferenced(ctx, files, func(string, table.Identifier) bool { return true })
	if err != nil || len(got) != len(files) {
		t.Fatalf("Unreferenced with every table skipped: %v, %v", got, err)
	}
}

// TestPurgeFilesSharedFolder: DROP TABLE … PURGE of a table whose folder
// another table shares (a table made at the location of one renamed
// away, by an earlier version) deletes the dropped table's files only,
// and lists no folder.
func TestPurgeFilesSharedFolder(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	mt, err := m.Get(LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "a"), idSchema)
	if err != nil {
		t.Fatal(err)
	}
	appendRows(t, a, 1, 2, 3)
	b, err := cat.CreateTable(ctx, icecat.ToIdentifier(DefaultSchema, "b"), idSchema, icecat.WithLocation(a.Location()))
	if err != nil {
		t.Fatal(err)
	}
	b = appendRows(t, b, 4)
	mine := dataFiles(t, b)[0].FilePath()
	ident := icecat.ToIdentifier(DefaultSchema, "b")
	if err := cat.DropTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	n, err := m.PurgeFiles(ctx, mt, ident, b)
	if err != nil || n == 0 {
		t.Fatalf("PurgeFiles: %d, %v", n, err)
	}
	if p, _ := LocalPath(mine); fileExists(p) {
		t.Fatal("the dropped table's data file stays")
	}
	if n := rowCount(t, cat, icecat.ToIdentifier(DefaultSchema, "a")); n != 3 {
		t.Fatalf("a has %d rows after b was purged, want 3", n)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
