// Package orphans deletes the files a failed write left behind: every
// file under a table's location whose name carries the write's UUID
// prefix, including files a writer had not finished. Local warehouses
// (file:// or plain paths) are walked on disk; other schemes are listed
// through the table's iceberg-go IO when it can list (the gocloud IO for
// s3://, gs://, azblob:// can), otherwise the caller deletes only the
// files it was told about. It also deletes the table metadata file a
// commit that lost its race wrote before the catalog refused it.
package orphans

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icefloe/icefloe/catalog"
)

// Remove deletes every regular file under location whose base name
// contains prefix and returns how many it deleted. A location that does
// not exist deletes nothing. prefix must not be empty. fsys (the table's
// IO) lists and deletes non-local locations; it may be nil for local ones.
func Remove(ctx context.Context, fsys iceio.IO, location, prefix string) (int, error) {
	if prefix == "" {
		return 0, errors.New("orphans: empty prefix")
	}
	if root, ok := catalog.LocalPath(location); ok {
		return removeLocal(root, prefix)
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return 0, nil
	}
	var matched []string
	err := lister.WalkDir(strings.TrimSuffix(location, "/"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.Contains(path.Base(p), prefix) {
			matched = append(matched, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if bulk, ok := fsys.(iceio.BulkRemovableIO); ok && len(matched) > 0 {
		done, err := bulk.DeleteFiles(ctx, matched)
		return len(done), err
	}
	n := 0
	var errs []error
	for _, p := range matched {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func removeLocal(root, prefix string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() && strings.Contains(d.Name(), prefix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
