package orphans

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRemove(t *testing.T) {
	root := t.TempDir()
	files := []string{
		"data/a=1/00000-0-11111111-2222-3333-4444-000001000000-00001.parquet",
		"data/a=2/00000-0-11111111-2222-3333-4444-000002000001-00001.parquet",
		"data/00000-0-99999999-2222-3333-4444-000000000000-00001.parquet",
		"metadata/00001-11111111-2222-3333-4444-000000000000.metadata.json.keep",
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Remove("file://"+root+"/data", "11111111-2222-3333-4444-")
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v", n, err)
	}
	var left []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	slices.Sort(left)
	if !slices.Equal(left, []string{files[2], files[3]}) {
		t.Fatalf("left %v", left)
	}
	if n, err := Remove(filepath.Join(root, "missing"), "x"); n != 0 || err != nil {
		t.Fatalf("missing dir: %d, %v", n, err)
	}
	if n, err := Remove("s3://bucket/t", "x"); n != 0 || err != nil || Listable("s3://bucket/t") {
		t.Fatalf("s3: %d, %v", n, err)
	}
	if _, err := Remove(root, ""); err == nil {
		t.Fatal("empty prefix accepted")
	}
}
