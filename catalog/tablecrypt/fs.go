package tablecrypt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// FS is an iceberg-go IO that encrypts and decrypts the files below one
// table's location (all but its metadata JSON) with keys derived from the
// table key. Other paths are refused: an encrypted table keeps its files
// under its location.
type FS struct {
	base iceio.IO
	root string
	key  []byte
}

var (
	_ iceio.WriteFileIO     = (*FS)(nil)
	_ iceio.ListableIO      = (*FS)(nil)
	_ iceio.BulkRemovableIO = (*FS)(nil)
)

// NewFS wraps base for the table at location with key.
func NewFS(base iceio.IO, location string, key []byte) *FS {
	return &FS{base: base, root: strings.TrimSuffix(normalize(location), "/"), key: key}
}

// WrapFunc wraps the IO fsF opens, for table.New.
func WrapFunc(fsF func(context.Context) (iceio.IO, error), location string, key []byte) func(context.Context) (iceio.IO, error) {
	return func(ctx context.Context) (iceio.IO, error) {
		base, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		return NewFS(base, location, key), nil
	}
}

// String names the IO without its key.
func (f *FS) String() string { return "tablecrypt.FS(" + f.root + ", key redacted)" }

// normalize spells local locations one way (file:///x, file:/x and /x
// are the same file).
func normalize(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" && (u.Host == "" || u.Host == "localhost") {
		return u.Path
	}
	return p
}

// plain reports whether name stays in the clear: metadata JSON files,
// which the catalog and other engines read to find the table.
func plain(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(base, ".metadata.json") || strings.HasSuffix(base, ".metadata.json.gz") || base == "version-hint.text"
}

// keyOf is the key of the file at name, which must be below the table's
// location.
func (f *FS) keyOf(name string) ([]byte, error) {
	rel, ok := strings.CutPrefix(normalize(name), f.root+"/")
	if !ok || rel == "" || strings.Contains("/"+rel+"/", "/../") {
		return nil, fmt.Errorf("tablecrypt: %s is outside the encrypted table's location", name)
	}
	return fileKey(f.key, rel)
}

func (f *FS) Open(name string) (iceio.File, error) {
	if plain(name) {
		return f.base.Open(name)
	}
	key, err := f.keyOf(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := f.base.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := newReader(file, name, key)
	if err != nil {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return r, nil
}

func (f *FS) ReadFile(name string) ([]byte, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	out := make([]byte, st.Size())
	if _, err := file.ReadAt(out, 0); err != nil && st.Size() > 0 {
		return nil, err
	}
	return out, nil
}

func (f *FS) Create(name string) (iceio.FileWriter, error) {
	wfs, ok := f.base.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("tablecrypt: %T cannot write", f.base)
	}
	if plain(name) {
		return wfs.Create(name)
	}
	key, err := f.keyOf(name)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: name, Err: err}
	}
	w, err := wfs.Create(name)
	if err != nil {
		return nil, err
	}
	ew, err := newWriter(w, key)
	if err != nil {
		w.Close()
		return nil, err
	}
	return ew, nil
}

func (f *FS) WriteFile(name string, p []byte) error {
	wfs, ok := f.base.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("tablecrypt: %T cannot write", f.base)
	}
	if plain(name) {
		return wfs.WriteFile(name, p)
	}
	key, err := f.keyOf(name)
	if err != nil {
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	enc, err := sealAll(key, p)
	if err != nil {
		return err
	}
	return wfs.WriteFile(name, enc)
}

func (f *FS) Remove(name string) error { return f.base.Remove(name) }

// WalkDir lists the files as stored (sizes are the encrypted ones).
func (f *FS) WalkDir(root string, fn fs.WalkDirFunc) error {
	l, ok := f.base.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("tablecrypt: %T cannot list", f.base)
	}
	return l.WalkDir(root, fn)
}

func (f *FS) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	if b, ok := f.base.(iceio.BulkRemovableIO); ok {
		return b.DeleteFiles(ctx, paths)
	}
	var done []string
	for _, p := range paths {
		if err := f.base.Remove(p); err != nil && !isNotExist(err) {
			return done, err
		}
		done = append(done, p)
	}
	return done, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
