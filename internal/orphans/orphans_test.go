package orphans

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob/memblob"
)

func TestRemove(t *testing.T) {
	ctx := context.Background()
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
	n, err := Remove(ctx, nil, "file://"+root+"/data", "11111111-2222-3333-4444-")
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
	if n, err := Remove(ctx, nil, filepath.Join(root, "missing"), "x"); n != 0 || err != nil {
		t.Fatalf("missing dir: %d, %v", n, err)
	}
	if _, err := Remove(ctx, nil, root, ""); err == nil {
		t.Fatal("empty prefix accepted")
	}
}

// TestRemoveObjectStore: on an object store the table's IO lists the
// location; only files under it carrying the prefix go.
func TestRemoveObjectStore(t *testing.T) {
	ctx := context.Background()
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	fsys := blobfs.New(ctx, bucket, blobfs.DefaultObjectLocationExtractor("bucket", "s3"))
	keys := []string{
		"t/data/a=1/00000-0-11111111-2222-3333-4444-000001000000-00001.parquet",
		"t/data/00000-0-11111111-2222-3333-4444-000002000000-00001.parquet",
		"t/data/00000-0-99999999-2222-3333-4444-000000000000-00001.parquet",
		"other/00000-0-11111111-2222-3333-4444-000003000000-00001.parquet",
	}
	for _, k := range keys {
		if err := bucket.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Remove(ctx, fsys, "s3://bucket/t/", "11111111-2222-3333-4444-")
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v", n, err)
	}
	var left []string
	it := bucket.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			break
		}
		left = append(left, obj.Key)
	}
	slices.Sort(left)
	if want := []string{keys[3], keys[2]}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if n, err := Remove(ctx, fsys, "s3://bucket/missing", "x"); n != 0 || err != nil {
		t.Fatalf("missing prefix: %d, %v", n, err)
	}
	// An IO that cannot list deletes nothing and does not fail.
	if n, err := Remove(ctx, plainIO{fsys}, "s3://bucket/t", "99999999"); n != 0 || err != nil {
		t.Fatalf("unlistable IO: %d, %v", n, err)
	}
}

// plainIO hides every interface of an IO but iceio.IO.
type plainIO struct{ iceio.IO }
