package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
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
