// Package orphans deletes the files a failed write left behind: every
// file under a table's location whose name carries the write's UUID
// prefix, including files a writer had not finished. Only local
// warehouses (file:// or plain paths) can be listed; for other schemes the
// caller deletes the files it was told about.
package orphans

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Listable reports whether location is a local directory Remove can list.
func Listable(location string) bool {
	_, ok := localPath(location)
	return ok
}

// Remove deletes every regular file under location whose base name
// contains prefix and returns how many it deleted. A location that does
// not exist deletes nothing. prefix must not be empty.
func Remove(location, prefix string) (int, error) {
	if prefix == "" {
		return 0, errors.New("orphans: empty prefix")
	}
	root, ok := localPath(location)
	if !ok {
		return 0, nil
	}
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

func localPath(location string) (string, bool) {
	if strings.HasPrefix(location, "/") {
		return location, true
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	return u.Path, true
}
