package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
)

// localMounts mounts a new embedded catalog as "local"; the test's end
// closes it.
func localMounts(t *testing.T) (icecat.Catalog, *Mounts) {
	t.Helper()
	cat, props, err := OpenLocal(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := NewMounts()
	if err := m.Mount(LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return cat, m
}

func TestOpenLocalMountLoad(t *testing.T) {
	ctx := context.Background()
	cat, m := localMounts(t)
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	ref := TableRef{Catalog: LocalCatalogName, Schema: DefaultSchema, Table: "t"}
	if _, err := cat.CreateTable(ctx, ref.Ident(), schema); err != nil {
		t.Fatal(err)
	}
	p, err := m.LoadTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if p.MetadataLocation == "" || p.StorageProps["warehouse"] == "" {
		t.Fatalf("pinned: %+v", p.Ref)
	}
	_, err = m.LoadTable(ctx, TableRef{Catalog: LocalCatalogName, Schema: DefaultSchema, Table: "nope"})
	if !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := m.LoadTable(ctx, TableRef{Catalog: "x", Schema: "s", Table: "t"}); !errors.Is(err, ErrCatalogNotFound) {
		t.Fatalf("missing catalog: %v", err)
	}
}

func TestLocalPath(t *testing.T) {
	for loc, want := range map[string]string{
		"/wh/t":                       "/wh/t",
		"/wh/t/":                      "/wh/t",
		"file:///wh/t/data/a.parquet": "/wh/t/data/a.parquet",
		"file://localhost/wh/t":       "/wh/t",
		"file:/wh/t":                  "/wh/t",
		"FILE:///wh/t":                "/wh/t",
		"file:///wh/c=x%25y/a%20b":    "/wh/c=x%25y/a%20b",
		"file:relative":               "",
		"file://host/wh/t":            "",
		"s3://bucket/wh/t":            "",
		"relative/t":                  "",
		"":                            "",
	} {
		got, ok := LocalPath(loc)
		if got != want || ok != (want != "") {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", loc, got, ok, want)
		}
	}
}

// TestLocalFSLiteral: a file: location with a percent-escape (as Iceberg
// writers record partition values) is written and read at the path it
// spells, where other engines look for it; a file an earlier version
// wrote at the decoded path still reads.
func TestLocalFSLiteral(t *testing.T) {
	dir := t.TempDir()
	loc := "file://" + dir + "/data/c=x%25y/f.parquet"
	fsys, err := iceio.LoadFS(context.Background(), nil, loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.(iceio.WriteFileIO).WriteFile(loc, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "c=x%25y", "f.parquet")); err != nil || string(b) != "new" {
		t.Fatalf("literal path: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "c=x%y")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("decoded path exists: %v", err)
	}
	legacy := filepath.Join(dir, "old", "c=a/b")
	if err := os.MkdirAll(filepath.Dir(legacy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := fsys.(iceio.ReadFileIO).ReadFile("file://" + dir + "/old/c=a%2Fb")
	if err != nil || string(b) != "old" {
		t.Fatalf("legacy decoded path: %q, %v", b, err)
	}
}
