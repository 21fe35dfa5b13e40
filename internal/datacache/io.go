package datacache

import (
	"context"
	"errors"
	"os"

	icebergio "github.com/apache/iceberg-go/io"
)

// IO returns an iceberg-go IO that opens the files listed in sizes (by
// location, with their size from the table metadata) from their local
// copies, fetching them into the cache first, and everything else through
// inner. A file that does not fit the cache is read through inner. Get's
// checks apply: a file gone or changed on storage fails its Open.
func (c *Cache) IO(ctx context.Context, inner icebergio.IO, sizes map[string]int64) icebergio.IO {
	return &cachingIO{IO: inner, c: c, ctx: ctx, sizes: sizes}
}

type cachingIO struct {
	icebergio.IO
	c     *Cache
	ctx   context.Context
	sizes map[string]int64
}

func (f *cachingIO) Open(name string) (icebergio.File, error) {
	size, ok := f.sizes[name]
	if !ok {
		return f.IO.Open(name)
	}
	path, release, err := f.c.Get(f.ctx, f.IO, name, size)
	if errors.Is(err, ErrNotCached) {
		return f.IO.Open(name)
	}
	if err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		release()
		return nil, err
	}
	return &cachedFile{File: file, release: release}, nil
}

// cachedFile is an open local copy; Close releases its pin.
type cachedFile struct {
	*os.File
	release func()
}

func (f *cachedFile) Close() error {
	err := f.File.Close()
	f.release()
	return err
}
