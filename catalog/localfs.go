package catalog

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// iceberg-go's local IO reads a file: location as a URI and opens its
// percent-decoded path, so a partition directory it records escaped
// (c=x%25y, as PartitionSpec.PartitionToPath writes it) lands on disk
// unescaped (c=x%y), where Java's HadoopFileIO and pyiceberg, which take
// a location's path literally, do not find it. icefloe registers literalFS
// for the file scheme and for plain paths instead, so every local file is
// at the path its location spells.
func init() {
	factory := func(context.Context, *url.URL, map[string]string) (iceio.IO, error) {
		return literalFS{}, nil
	}
	for _, scheme := range []string{"file", ""} {
		iceio.Unregister(scheme)
		iceio.Register(scheme, factory)
	}
}

// literalFS is iceberg-go's LocalFS with locations mapped by LocalPath.
// Reads of a location with a percent sign whose literal path does not
// exist fall back to the decoded path, where earlier versions wrote it.
type literalFS struct{ iceio.LocalFS }

// path is name as a plain local path for writes and listings.
func (literalFS) path(name string) string {
	if p, ok := LocalPath(name); ok {
		return p
	}
	return name
}

// existing is name as a plain local path for a file that should exist.
func (f literalFS) existing(name string) string {
	p := f.path(name)
	if !strings.Contains(name, "%") {
		return p
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return p
	}
	if u, err := url.Parse(name); err == nil && u.Scheme == "file" && filepath.IsAbs(u.Path) {
		if _, err := os.Lstat(u.Path); err == nil {
			return filepath.Clean(u.Path)
		}
	}
	return p
}

func (f literalFS) Open(name string) (iceio.File, error)  { return f.LocalFS.Open(f.existing(name)) }
func (f literalFS) ReadFile(name string) ([]byte, error)  { return f.LocalFS.ReadFile(f.existing(name)) }
func (f literalFS) Stat(name string) (fs.FileInfo, error) { return f.LocalFS.Stat(f.existing(name)) }
func (f literalFS) Remove(name string) error              { return f.LocalFS.Remove(f.existing(name)) }
func (f literalFS) RemoveAll(name string) error           { return f.LocalFS.RemoveAll(f.path(name)) }
func (f literalFS) Create(name string) (iceio.FileWriter, error) {
	return f.LocalFS.Create(f.path(name))
}
func (f literalFS) WriteFile(name string, content []byte) error {
	return f.LocalFS.WriteFile(f.path(name), content)
}
func (f literalFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	return f.LocalFS.WalkDir(f.path(root), fn)
}
func (f literalFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return f.LocalFS.ReadDir(f.path(name))
}
func (f literalFS) MkdirAll(name string) error { return f.LocalFS.MkdirAll(f.path(name)) }
func (f literalFS) Mkdir(name string) error    { return f.LocalFS.Mkdir(f.path(name)) }
func (f literalFS) Rename(oldpath, newpath string) error {
	return f.LocalFS.Rename(f.existing(oldpath), f.path(newpath))
}
func (f literalFS) RenameNoReplace(oldpath, newpath string) error {
	return f.LocalFS.RenameNoReplace(f.existing(oldpath), f.path(newpath))
}
