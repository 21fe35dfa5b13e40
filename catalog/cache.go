package catalog

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// DefaultMetadataCacheSize is how many metadata versions a MetadataCache
// keeps when NewMetadataCache is given no positive capacity.
const DefaultMetadataCacheSize = 256

// MetadataCache is the LRU of parsed table metadata that workers reopen
// pinned tables through. It is keyed by metadata location only: a metadata
// file is immutable once written, so one location always parses to the same
// metadata whoever asks. Storage properties are not part of the key; each
// Open returns a table that reads files with the caller's own properties.
// It is safe for concurrent use.
type MetadataCache struct {
	lru    *lru.Cache[string, table.Metadata]
	flight singleflight.Group
	hits   atomic.Uint64
	misses atomic.Uint64
}

// NewMetadataCache returns a cache holding up to capacity metadata
// versions; capacity <= 0 means DefaultMetadataCacheSize.
func NewMetadataCache(capacity int) *MetadataCache {
	if capacity <= 0 {
		capacity = DefaultMetadataCacheSize
	}
	c, err := lru.New[string, table.Metadata](capacity)
	if err != nil {
		// lru.New fails only for a non-positive size, excluded above.
		panic(err)
	}
	return &MetadataCache{lru: c}
}

// Open returns the table whose metadata is at location, named ident, with
// files opened through props. The metadata is read from storage only when
// it is not cached; concurrent Opens of one uncached location read it once.
// A load is not cancelled when one waiting caller gives up, so the others
// still get it; each caller stops waiting when its own ctx ends. Errors are
// not cached.
func (c *MetadataCache) Open(ctx context.Context, ident table.Identifier, location string, props map[string]string) (*table.Table, error) {
	fsF := io.LoadFSFunc(props, location)
	if meta, ok := c.lru.Get(location); ok {
		c.hits.Add(1)
		return table.New(ident, meta, location, fsF, nil), nil
	}
	loaded := false
	ch := c.flight.DoChan(location, func() (any, error) {
		loaded = true
		c.misses.Add(1)
		tbl, err := table.NewFromLocation(context.WithoutCancel(ctx), ident, location, fsF, nil)
		if err != nil {
			return nil, fmt.Errorf("catalog: open metadata %s: %w", location, err)
		}
		meta := tbl.Metadata()
		c.lru.Add(location, meta)
		return meta, nil
	})
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		if !loaded {
			c.hits.Add(1)
		}
		return table.New(ident, res.Val.(table.Metadata), location, fsF, nil), nil
	}
}

// Stats returns how many Opens were served without reading storage (hits,
// including those that waited for another caller's load) and how many
// metadata reads were made (misses).
func (c *MetadataCache) Stats() (hits, misses uint64) {
	return c.hits.Load(), c.misses.Load()
}

// Len returns how many metadata versions are cached.
func (c *MetadataCache) Len() int { return c.lru.Len() }
