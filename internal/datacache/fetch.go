package datacache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"golang.org/x/sync/errgroup"
)

// chunkPool recycles the buffers of ranged reads.
var chunkPool sync.Pool

// fetch copies the size bytes of the object at location into a new file
// at dst: ranged reads in parallel (bounded cache-wide by the semaphore)
// written into a temporary file in the cache directory, synced, then
// renamed to dst, so dst is complete whenever it exists.
func (c *Cache) fetch(ctx context.Context, fsys icebergio.IO, location, dst string, size int64) (err error) {
	src, err := fsys.Open(location)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(c.opts.Dir, "tmp-")
	if err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for off := int64(0); off < size; off += c.opts.ChunkBytes {
		n := min(c.opts.ChunkBytes, size-off)
		select {
		case c.sem <- struct{}{}:
		case <-gctx.Done():
			g.Wait()
			return context.Cause(gctx)
		}
		g.Go(func() error {
			defer func() { <-c.sem }()
			return c.copyRange(gctx, src, tmp, location, off, n)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	return nil
}

// copyRange copies n bytes at off of src into dst.
func (c *Cache) copyRange(ctx context.Context, src io.ReaderAt, dst io.WriterAt, location string, off, n int64) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	buf, _ := chunkPool.Get().(*[]byte)
	if buf == nil || int64(cap(*buf)) < c.opts.ChunkBytes {
		b := make([]byte, c.opts.ChunkBytes)
		buf = &b
	}
	defer chunkPool.Put(buf)
	p := (*buf)[:n]
	got, err := src.ReadAt(p, off)
	if int64(got) == n && (err == nil || errors.Is(err, io.EOF)) {
		err = nil
	} else if err == nil || errors.Is(err, io.EOF) {
		// The object ended early: it is not the file the metadata sized.
		return &fs.PathError{Op: "read", Path: location,
			Err: fmt.Errorf("%w: it ends at %d bytes, the table's metadata says more", ErrChanged, off+int64(got))}
	}
	if err != nil {
		return &fs.PathError{Op: "read", Path: location, Err: fmt.Errorf("%d bytes at %d: %w", n, off, err)}
	}
	if _, err := dst.WriteAt(p, off); err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	return nil
}
