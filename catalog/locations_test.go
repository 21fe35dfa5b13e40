package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocationsCheck(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{wh, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(wh, "link")); err != nil {
		t.Fatal(err)
	}
	l, err := NewLocations("file://"+wh, []string{"s3://Data-Bucket/lake", "gs://g/x/"})
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{
		wh, wh + "/db/t", "file://" + wh + "/db/t", "file://localhost" + wh + "/t", wh + "/a/../b",
		"s3://data-bucket/lake/t", "s3a://data-bucket/lake", "s3n://DATA-BUCKET/lake/x/y", "gcs://g/x/t", "gs://g/x",
	}
	for _, loc := range ok {
		if err := l.Check(WriteDataPathKey, loc); err != nil {
			t.Errorf("%s: %v", loc, err)
		}
	}
	bad := []string{
		outside, "/tmp", wh + "/../outside", wh + "x", wh + "/link/t", "file:///etc", "relative/path", "",
		"s3://other/lake", "s3://data-bucket/lakehouse", "s3://data-bucket/lake/../x", "s3://data-bucket/lake/./x",
		"s3://data-bucket/lake//x", "s3://data-bucket/lake/%2e%2e/x", "s3://k:secret@data-bucket/lake/t",
		"s3://data-bucket/lake/t?versionId=1", "gs://g/xy", "abfs://c@a.dfs.core.windows.net/x", "http://host/x",
	}
	for _, loc := range bad {
		err := l.Check(WriteDataPathKey, loc)
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), WriteDataPathKey) {
			t.Errorf("%q: got %v, want ErrLocation naming the key", loc, err)
		}
		if strings.Contains(loc, "secret") && strings.Contains(err.Error(), "secret") {
			// The message quotes the location; credentials in it are the
			// client's own, but never repeat them.
			t.Errorf("%q: the error repeats the credentials: %v", loc, err)
		}
	}
	if err := l.Check(LocationProviderImplKey, wh); !errors.Is(err, ErrLocation) {
		t.Errorf("location provider: %v", err)
	}
	none, _ := NewLocations("my_warehouse", nil)
	if err := none.Check(LocationKey, "s3://b/x"); !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), "allowed_locations") {
		t.Errorf("a catalog with no location: %v", err)
	}
	if _, err := NewLocations("", []string{"relative"}); err == nil {
		t.Error("a relative allowed location was accepted")
	}
	for key, want := range map[string]bool{"location": true, "write.data.path": true, "write.metadata.path": true,
		"write.object-storage.path": true, "write.folder-storage.path": true, "Write.Data.Path": true,
		"write.parquet.compression-codec": false, "format-version": false} {
		if PlacesFiles(key) != want {
			t.Errorf("PlacesFiles(%q) = %v", key, !want)
		}
	}
}
