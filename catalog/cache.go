package catalog

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/singleflight"

	"github.com/icefloe/icefloe/internal/tablecrypt"
)

// DefaultMetadataCacheBytes bounds a MetadataCache made with no positive
// size.
const DefaultMetadataCacheBytes = 256 << 20

// MetadataCache is the LRU of parsed table metadata that workers reopen
// pinned tables through, bounded by bytes. It is keyed by metadata location
// only: a metadata file is immutable once written, so one location always
// parses to the same metadata whoever asks, and rotating (vended) storage
// credentials do not thrash it. Storage properties are not part of the key;
// each Open returns a table that reads files with the caller's own
// properties.
//
// An entry's size is the length of its metadata as JSON, a proxy for the
// parsed size that grows with the same things (snapshots, schemas, specs).
// An entry larger than the whole bound is served but not kept. It is safe
// for concurrent use.
type MetadataCache struct {
	max    int64
	flight singleflight.Group
	hits   atomic.Uint64
	misses atomic.Uint64

	mu      sync.Mutex
	order   *list.List // front = most recently used; values are *cacheEntry
	entries map[string]*list.Element
	bytes   int64
	evicted uint64
}

type cacheEntry struct {
	location string
	meta     table.Metadata
	size     int64
}

// NewMetadataCache returns a cache holding up to maxBytes of metadata;
// maxBytes <= 0 means DefaultMetadataCacheBytes.
func NewMetadataCache(maxBytes int64) *MetadataCache {
	if maxBytes <= 0 {
		maxBytes = DefaultMetadataCacheBytes
	}
	return &MetadataCache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// Open returns the table whose metadata is at location, named ident, with
// files opened through props. The metadata is read from storage only when
// it is not cached; concurrent Opens of one uncached location read it once.
// A load is not cancelled when one waiting caller gives up, so the others
// still get it; each caller stops waiting when its own ctx ends. Errors are
// not cached.
func (c *MetadataCache) Open(ctx context.Context, ident table.Identifier, location string, props map[string]string) (*table.Table, error) {
	fsF := io.LoadFSFunc(props, location)
	// An encrypted table's files (not its metadata JSON) are read through
	// its key, which the planner put in props.
	tableFS := func(meta table.Metadata) (func(context.Context) (io.IO, error), error) {
		enc, ok := props[tablecrypt.TableKeyProp]
		if !ok {
			return fsF, nil
		}
		key, err := tablecrypt.DecodeKey(enc)
		if err != nil {
			return nil, err
		}
		return tablecrypt.WrapFunc(fsF, meta.Location(), key), nil
	}
	open := func(meta table.Metadata) (*table.Table, error) {
		f, err := tableFS(meta)
		if err != nil {
			return nil, err
		}
		return table.New(ident, meta, location, f, nil), nil
	}
	if meta, ok := c.get(location); ok {
		c.hits.Add(1)
		return open(meta)
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
		c.add(location, meta)
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
		return open(res.Val.(table.Metadata))
	}
}

func (c *MetadataCache) get(location string) (table.Metadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[location]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).meta, true
}

// metadataSize is the JSON length of meta.
func metadataSize(meta table.Metadata) int64 {
	b, err := json.Marshal(meta)
	if err != nil {
		return 1 << 20 // unknown: count it as large
	}
	return int64(len(b))
}

func (c *MetadataCache) add(location string, meta table.Metadata) {
	size := metadataSize(meta)
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.max {
		return
	}
	if el, ok := c.entries[location]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[location] = c.order.PushFront(&cacheEntry{location: location, meta: meta, size: size})
	c.bytes += size
	for c.bytes > c.max {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.entries, e.location)
		c.bytes -= e.size
		c.evicted++
	}
}

// CacheStats are a MetadataCache's counters.
type CacheStats struct {
	// Hits are Opens served without reading storage, including those that
	// waited for another caller's load; Misses are metadata reads.
	Hits, Misses uint64
	// Entries and Bytes are what is cached now; MaxBytes is the bound.
	Entries         int
	Bytes, MaxBytes int64
	// Evictions counts entries dropped to stay within MaxBytes.
	Evictions uint64
}

// Stats returns how many Opens were served without reading storage (hits,
// including those that waited for another caller's load) and how many
// metadata reads were made (misses).
func (c *MetadataCache) Stats() (hits, misses uint64) {
	return c.hits.Load(), c.misses.Load()
}

// Snapshot returns all the counters at once.
func (c *MetadataCache) Snapshot() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(),
		Entries: len(c.entries), Bytes: c.bytes, MaxBytes: c.max, Evictions: c.evicted,
	}
}

// Len returns how many metadata versions are cached.
func (c *MetadataCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Bytes returns the size of what is cached.
func (c *MetadataCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
