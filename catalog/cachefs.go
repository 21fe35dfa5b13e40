package catalog

import (
	"bytes"
	"context"
	"io/fs"
	"time"

	"github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/memsize"
)

// FS wraps a table's file system for reading: its manifest lists and
// manifests are read from the cache (filled on first read), everything else
// from the store. Planning a scan reads every manifest of the snapshot, so
// on an object store a warm cache saves one GET per manifest and query.
// The IO it returns only reads (Open, Remove): give it to tables that plan
// scans, never to one that commits (see PlanningTable).
func (c *MetadataCache) FS(fsF table.FSysF) table.FSysF {
	return func(ctx context.Context) (io.IO, error) {
		inner, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		return &cachedFS{IO: inner, c: c, ctx: ctx}, nil
	}
}

type cachedFS struct {
	io.IO
	c   *MetadataCache
	ctx context.Context
}

func (f *cachedFS) Open(name string) (io.File, error) {
	if !immutableFile(name) {
		return f.IO.Open(name)
	}
	v, err := f.c.get(f.ctx, kindFile, name, func(context.Context) (any, int64, error) {
		data, err := readAll(f.IO, name)
		return data, memsize.Of(data), err
	})
	if err != nil {
		return nil, err
	}
	data := v.([]byte)
	return &memFile{Reader: bytes.NewReader(data), name: name, size: int64(len(data))}, nil
}

func readAll(fsys io.IO, name string) ([]byte, error) {
	if rf, ok := fsys.(io.ReadFileIO); ok {
		return rf.ReadFile(name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err = b.ReadFrom(f); err != nil {
		return nil, err
	}
	// The buffer grew by doubling: keep only what the file holds.
	return bytes.Clone(b.Bytes()), nil
}

// memFile is a cached file's bytes as an io.File; the bytes are shared and
// never written.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (m *memFile) Close() error               { return nil }
func (m *memFile) Stat() (fs.FileInfo, error) { return m, nil }
func (m *memFile) Name() string               { return m.name }
func (m *memFile) Size() int64                { return m.size }
func (m *memFile) Mode() fs.FileMode          { return 0o444 }
func (m *memFile) ModTime() time.Time         { return time.Time{} }
func (m *memFile) IsDir() bool                { return false }
func (m *memFile) Sys() any                   { return nil }

// PlanningTable returns tbl (any version of it, e.g. one pinned to an
// older snapshot) reading its manifests through the cache. It plans scans
// and cannot commit.
func (c *MetadataCache) PlanningTable(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), c.FS(tbl.FS), nil)
}
