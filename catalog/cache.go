package catalog

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/singleflight"

	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/internal/memsize"
)

// DefaultMetadataCacheBytes bounds a MetadataCache made with no positive
// size.
const DefaultMetadataCacheBytes = 256 << 20

// MetadataCache is the LRU of what Iceberg never rewrites in place, keyed
// by location and bounded by bytes: parsed table metadata (workers reopen
// pinned tables through it, the coordinator loads tables of SQL catalogs
// through it), the bytes of manifest lists and manifests (read through
// FS), and values derived from one metadata version only (Memo: the
// planner's file plans). A metadata file, manifest list or manifest is
// immutable once written, so one location always reads the same whoever
// asks, and rotating (vended) storage credentials do not thrash the cache.
// Storage properties are not part of any key; each Open returns a table
// that reads files with the caller's own properties.
//
// Every entry is counted by the heap it keeps alive, measured when it is
// added (internal/memsize): parsed metadata with its snapshots decoded and
// its current schema's indexes built (what a parsed version grows to once
// planned on: some ten times its JSON), a file's buffer, a memo's value,
// each with its key and the cache's own bookkeeping. An entry larger than
// the whole bound is served but not kept. It is safe for concurrent use.
type MetadataCache struct {
	max    int64
	flight singleflight.Group
	kinds  [numKinds]kindCounters

	mu      sync.Mutex
	order   *list.List // front = most recently used; values are *cacheEntry
	entries map[string]*list.Element
	bytes   int64
	evicted uint64
	// classes count each class of memo apart (memo.go): guarded by mu.
	classes map[string]*classCounters
}

// kind is what an entry holds; its key starts with the kind's prefix.
type kind int

const (
	kindMetadata kind = iota
	kindFile
	kindMemo
	numKinds
)

var kindPrefix = [numKinds]string{"meta\x00", "file\x00", "memo\x00"}

type kindCounters struct{ hits, misses atomic.Uint64 }

type cacheEntry struct {
	key   string
	value any
	size  int64
	class string // the memo class ("" for metadata and files)
}

// NewMetadataCache returns a cache holding up to maxBytes; maxBytes <= 0
// means DefaultMetadataCacheBytes.
func NewMetadataCache(maxBytes int64) *MetadataCache {
	if maxBytes <= 0 {
		maxBytes = DefaultMetadataCacheBytes
	}
	return &MetadataCache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}, classes: map[string]*classCounters{}}
}

// Open returns the table whose metadata is at location, named ident, with
// files opened through props. The metadata is read from storage only when
// it is not cached; concurrent Opens of one uncached location read it once.
// A load is not cancelled when one waiting caller gives up, so the others
// still get it; each caller stops waiting when its own ctx ends. Errors are
// not cached. The table cannot commit; Load gives one that can.
func (c *MetadataCache) Open(ctx context.Context, ident table.Identifier, location string, props map[string]string) (*table.Table, error) {
	return c.Load(ctx, ident, location, props, nil)
}

// Load is Open for a table that commits through cat.
func (c *MetadataCache) Load(ctx context.Context, ident table.Identifier, location string, props map[string]string, cat table.CatalogIO) (*table.Table, error) {
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
	v, err := c.get(ctx, kindMetadata, location, func(ctx context.Context) (any, int64, error) {
		tbl, err := table.NewFromLocation(ctx, ident, location, fsF, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("catalog: open metadata %s: %w", location, err)
		}
		meta := tbl.Metadata()
		return meta, metadataSize(meta), nil
	})
	if err != nil {
		return nil, err
	}
	meta := v.(table.Metadata)
	f, err := tableFS(meta)
	if err != nil {
		return nil, err
	}
	return table.New(ident, meta, location, f, cat), nil
}

// Memo returns the value cached under key, or loads, caches and returns
// it. key must name everything the value derives from, by immutable
// locations and values only (e.g. a metadata location and the options of
// a scan, or a query's text). The value is counted by the memory it
// holds (memsize.Of), so it must not share memory with anything the
// caller changes later; load's errors are not cached. Concurrent Memos of
// one key load once, as Open does.
func (c *MetadataCache) Memo(ctx context.Context, key string, load func(ctx context.Context) (value any, err error)) (any, error) {
	return c.get(ctx, kindMemo, key, func(ctx context.Context) (any, int64, error) {
		v, err := load(ctx)
		if err != nil {
			return nil, 0, err
		}
		return v, memsize.Of(v), nil
	})
}

// Recall returns the value Remember put under key, counting a memo hit or
// miss: for values only their caller can compute (on its own connection,
// say), where Memo's shared load does not fit.
func (c *MetadataCache) Recall(key string) (any, bool) {
	v, ok := c.lookup(kindPrefix[kindMemo] + key)
	if ok {
		c.kinds[kindMemo].hits.Add(1)
	} else {
		c.kinds[kindMemo].misses.Add(1)
	}
	c.countClass(key, ok)
	return v, ok
}

// Remember caches value under key, counted as Memo counts it.
func (c *MetadataCache) Remember(key string, value any) {
	c.add(kindPrefix[kindMemo]+key, value, memsize.Of(value))
}

// Forget drops what Remember or Memo put under key, for a value found
// wrong (the file it was derived from has gone).
func (c *MetadataCache) Forget(key string) {
	key = kindPrefix[kindMemo] + key
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		c.remove(el, e)
	}
}

// get returns the entry of key of kind k, loading it on a miss.
func (c *MetadataCache) get(ctx context.Context, k kind, key string, load func(context.Context) (any, int64, error)) (_ any, err error) {
	hit := false
	if k == kindMemo {
		defer func(memoKey string) { c.countClass(memoKey, err == nil && hit) }(key)
	}
	key = kindPrefix[k] + key
	if v, ok := c.lookup(key); ok {
		c.kinds[k].hits.Add(1)
		hit = true
		return v, nil
	}
	loaded := false
	ch := c.flight.DoChan(key, func() (any, error) {
		loaded = true
		c.kinds[k].misses.Add(1)
		v, size, err := load(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		c.add(key, v, size)
		return v, nil
	})
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		if !loaded {
			c.kinds[k].hits.Add(1)
			hit = true
		}
		return res.Val, nil
	}
}

func (c *MetadataCache) lookup(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).value, true
}

// metadataSize is the memory parsed metadata holds once it is used:
// iceberg-go decodes the snapshots of a parsed file lazily and builds a
// schema's indexes on first use, so both are done here first, before it
// is shared, and then measured. What reflection cannot reach (the
// indexes a schema keeps in closures: parents, name mapping) is counted
// as the current schema's size once more.
func metadataSize(meta table.Metadata) int64 {
	meta.Snapshots()
	sc := meta.CurrentSchema()
	if sc == nil {
		return memsize.Of(meta)
	}
	warmSchema(sc)
	return memsize.Of(meta) + memsize.Of(sc)
}

// warmSchema builds the lazy indexes of sc that planning and reading use.
func warmSchema(sc *iceberg.Schema) {
	fields := sc.Fields()
	if len(fields) == 0 {
		return
	}
	f := fields[0]
	sc.FindFieldByID(f.ID)
	sc.FindColumnName(f.ID)
	sc.FindFieldByNameCaseInsensitive(f.Name)
	// Binding a predicate builds the field accessors.
	_, _ = iceberg.BindExpr(sc, iceberg.IsNull(iceberg.Reference(f.Name)), true)
}

// entryOverhead is what the cache itself spends per entry: the list
// element, the entry and its map slot.
const entryOverhead = 160

func (c *MetadataCache) add(key string, value any, size int64) {
	size += memsize.Of(key) + entryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.max {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	e := &cacheEntry{key: key, value: value, size: size, class: memoClass(key)}
	c.entries[key] = c.order.PushFront(e)
	c.bytes += size
	if e.class != "" {
		cc := c.class(e.class)
		cc.entries++
		cc.bytes += size
	}
	for c.bytes > c.max {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.remove(el, e)
		c.evicted++
		if e.class != "" {
			c.class(e.class).evictions++
		}
	}
}

// remove drops the entry e at el; c.mu is held.
func (c *MetadataCache) remove(el *list.Element, e *cacheEntry) {
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
	if e.class != "" {
		cc := c.class(e.class)
		cc.entries--
		cc.bytes -= e.size
	}
}

// KindStats are the counters of one kind of entry: Hits are lookups
// served without reading storage (or loading), including those that
// waited for another caller's load; Misses are loads.
type KindStats struct{ Hits, Misses uint64 }

// CacheStats are a MetadataCache's counters.
type CacheStats struct {
	// Hits and Misses count table metadata (Open, Load).
	Hits, Misses uint64
	// Files counts manifest lists and manifests read through FS; Memos
	// counts Memo.
	Files, Memos KindStats
	// Entries and Bytes are what is cached now; MaxBytes is the bound.
	Entries         int
	Bytes, MaxBytes int64
	// Evictions counts entries dropped to stay within MaxBytes.
	Evictions uint64
}

// Stats returns how many metadata Opens were served without reading
// storage (hits, including those that waited for another caller's load)
// and how many metadata reads were made (misses).
func (c *MetadataCache) Stats() (hits, misses uint64) {
	return c.kinds[kindMetadata].hits.Load(), c.kinds[kindMetadata].misses.Load()
}

// Snapshot returns all the counters at once.
func (c *MetadataCache) Snapshot() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	ks := func(k kind) KindStats {
		return KindStats{Hits: c.kinds[k].hits.Load(), Misses: c.kinds[k].misses.Load()}
	}
	meta := ks(kindMetadata)
	return CacheStats{
		Hits: meta.Hits, Misses: meta.Misses, Files: ks(kindFile), Memos: ks(kindMemo),
		Entries: len(c.entries), Bytes: c.bytes, MaxBytes: c.max, Evictions: c.evicted,
	}
}

// Len returns how many entries are cached.
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

// immutableFile tells whether a location is a manifest list or manifest:
// an Avro file of a table's metadata folder, which Iceberg writers never
// rewrite (their names carry a UUID or a snapshot id).
func immutableFile(location string) bool {
	return strings.HasSuffix(location, ".avro") && strings.Contains(location, "/metadata/")
}
