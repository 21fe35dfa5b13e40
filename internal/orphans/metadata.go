package orphans

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// MetadataVersion is the version a table metadata file's name starts
// with (00042-<uuid>.metadata.json is 42), or -1.
func MetadataVersion(location string) int {
	name := path.Base(location)
	i := strings.IndexByte(name, '-')
	if i <= 0 || !strings.Contains(name, ".metadata.json") {
		return -1
	}
	v, err := strconv.Atoi(name[:i])
	if err != nil {
		return -1
	}
	return v
}

// RemoveLostMetadata deletes the metadata files next to metadataLocation
// whose version is in [lo, hi], that known does not name, and whose
// content ours accepts; it returns how many it deleted. A file that does
// not parse (one still being written) is left alone.
func RemoveLostMetadata(ctx context.Context, fsys iceio.IO, metadataLocation string, lo, hi int, known map[string]bool, ours func(table.Metadata) bool) (int, error) {
	if lo < 0 || hi < lo {
		return 0, nil
	}
	dir := metadataLocation[:strings.LastIndexByte(metadataLocation, '/')+1]
	names, err := listNames(fsys, dir)
	if err != nil {
		return 0, err
	}
	fsF := func(context.Context) (iceio.IO, error) { return fsys, nil }
	n := 0
	var errs []error
	for _, name := range names {
		loc := dir + name
		if v := MetadataVersion(loc); v < lo || v > hi || known[loc] {
			continue
		}
		tbl, err := table.NewFromLocation(ctx, nil, loc, fsF, nil)
		if err != nil || !ours(tbl.Metadata()) {
			continue
		}
		if err := fsys.Remove(loc); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// listNames lists the base names of the files in dir (a location ending
// in "/"): on disk for a local one, else through fsys if it can list.
func listNames(fsys iceio.IO, dir string) ([]string, error) {
	var names []string
	if root, ok := catalog.LocalPath(dir); ok {
		entries, err := os.ReadDir(filepath.Clean(root))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				names = append(names, e.Name())
			}
		}
		return names, nil
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return nil, nil
	}
	root := strings.TrimSuffix(dir, "/")
	err := lister.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root {
				return fs.SkipDir
			}
			return nil
		}
		names = append(names, path.Base(p))
		return nil
	})
	return names, err
}
