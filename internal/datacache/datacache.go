package datacache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"gocloud.dev/blob"
)

// Defaults for Options.
const (
	DefaultMaxBytes    = 4 << 30
	DefaultChunkBytes  = 8 << 20
	DefaultParallelism = 8
)

// Errors of the cache, wrapped with the file's location.
var (
	// ErrChanged: the object on storage is not the file the table's
	// metadata describes (its size differs). The query must fail.
	ErrChanged = errors.New("datacache: data file changed on storage")
	// ErrNotCached: the file does not fit the cache now (larger than the
	// bound, or the rest is pinned by running queries). The caller reads
	// the file from the object store instead.
	ErrNotCached = errors.New("datacache: file not cached")
)

// Options configure a Cache.
type Options struct {
	// Dir holds the copies. Required; created with mode 0700. Nothing else
	// may write there: Open deletes what it does not recognise as a copy.
	Dir string
	// MaxBytes bounds the copies' total size; 0 means DefaultMaxBytes.
	MaxBytes int64
	// ChunkBytes is the size of each ranged read of a fetch; 0 means
	// DefaultChunkBytes.
	ChunkBytes int64
	// Parallelism bounds the ranged reads in flight across the cache; 0
	// means DefaultParallelism. Fetch memory is at most Parallelism ×
	// ChunkBytes.
	Parallelism int
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("datacache: Dir is required"))
	} else if !filepath.IsAbs(o.Dir) {
		errs = append(errs, fmt.Errorf("datacache: Dir %q is not an absolute path", o.Dir))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("datacache: MaxBytes must be >= 0, got %d", o.MaxBytes))
	}
	if o.ChunkBytes < 0 {
		errs = append(errs, fmt.Errorf("datacache: ChunkBytes must be >= 0, got %d", o.ChunkBytes))
	}
	if o.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("datacache: Parallelism must be >= 0, got %d", o.Parallelism))
	}
	return errors.Join(errs...)
}

// String describes the options.
func (o Options) String() string {
	return fmt.Sprintf("datacache.Options{Dir: %s, MaxBytes: %d, ChunkBytes: %d, Parallelism: %d}", o.Dir, o.MaxBytes, o.ChunkBytes, o.Parallelism)
}

// Stats are a Cache's counters since Open.
type Stats struct {
	// Hits are Gets served by a copy on disk; Misses are Gets that fetched
	// the file; Uncached are Gets answered ErrNotCached.
	Hits, Misses, Uncached uint64
	// FetchedBytes were read from object stores; HitBytes were served
	// from disk instead.
	FetchedBytes, HitBytes uint64
	// Evictions are copies dropped to stay within MaxBytes;
	// Invalidations are copies dropped because the object changed.
	Evictions, Invalidations uint64
	// Entries and Bytes are what is on disk now (Bytes includes fetches
	// in flight); MaxBytes is the bound.
	Entries         int
	Bytes, MaxBytes int64
}

// Cache is a worker's disk cache of object-store data files. It is safe
// for concurrent use.
type Cache struct {
	opts Options
	sem  chan struct{} // ranged reads in flight

	hits, misses, uncached  atomic.Uint64
	fetched, hitBytes       atomic.Uint64
	evictions, invalidation atomic.Uint64

	mu       sync.Mutex
	entries  map[string]*entry // every copy on disk, by key
	idle     *simplelru.LRU[string, *entry]
	bytes    int64 // copies plus reservations of fetches in flight
	inflight map[string]chan struct{}
}

// entry is one copy. Entries no reader pins are in idle, oldest first.
type entry struct {
	key, version string
	size         int64
	pins         int
	stale        bool // dropped from entries; delete the file when unpinned
	touched      time.Time
}

func (e *entry) name() string { return e.key + "-" + e.version + ".data" }

// Open opens the cache in o.Dir, rebuilding its index from the copies
// there: temporary files of interrupted fetches and files whose size does
// not match their name are deleted, the rest are ordered by modification
// time (the cache touches a copy when it is used) and trimmed to MaxBytes.
func Open(o Options) (*Cache, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.ChunkBytes == 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.Parallelism == 0 {
		o.Parallelism = DefaultParallelism
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("datacache: %w", err)
	}
	idle, err := simplelru.NewLRU[string, *entry](1<<30, nil)
	if err != nil {
		return nil, err
	}
	c := &Cache{opts: o, sem: make(chan struct{}, o.Parallelism), entries: map[string]*entry{}, idle: idle, inflight: map[string]chan struct{}{}}
	if err := c.rebuild(); err != nil {
		return nil, err
	}
	return c, nil
}

// rebuild indexes the copies in the directory.
func (c *Cache) rebuild() error {
	des, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return fmt.Errorf("datacache: %w", err)
	}
	var found []*entry
	for _, de := range des {
		path := filepath.Join(c.opts.Dir, de.Name())
		e, ok := parseName(de.Name())
		info, err := de.Info()
		if !ok || err != nil || !info.Mode().IsRegular() || info.Size() != e.size {
			os.RemoveAll(path)
			continue
		}
		e.touched = info.ModTime()
		found = append(found, e)
	}
	// Oldest first, so the most recently used end up newest in idle.
	sortByTouched(found)
	for _, e := range found {
		if old, dup := c.entries[e.key]; dup {
			// Two versions of one file: keep the newer.
			c.drop(old)
		}
		c.entries[e.key] = e
		c.idle.Add(e.key, e)
		c.bytes += e.size
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(0)
	return nil
}

func sortByTouched(es []*entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].touched.Before(es[j-1].touched); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// parseName reads a copy's file name: <key hash>-<size>-<version>.data.
func parseName(name string) (*entry, bool) {
	base, ok := strings.CutSuffix(name, ".data")
	if !ok {
		return nil, false
	}
	parts := strings.Split(base, "-")
	if len(parts) != 3 || len(parts[0]) != 32 || len(parts[2]) != 16 {
		return nil, false
	}
	size, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || size < 0 {
		return nil, false
	}
	return &entry{key: parts[0] + "-" + parts[1], version: parts[2], size: size}, true
}

// keyOf is the index key of the file at location with size bytes.
func keyOf(location string, size int64) string {
	sum := sha256.Sum256([]byte(location))
	return hex.EncodeToString(sum[:16]) + "-" + strconv.FormatInt(size, 10)
}

// versionOf names the version of an object from its attributes: the ETag
// when the store gives one, else its modification time and size.
func versionOf(info fs.FileInfo) string {
	h := fnv.New64a()
	var attrs *blob.Attributes
	if a, ok := info.Sys().(*blob.Attributes); ok && a.ETag != "" {
		attrs = a
	}
	if attrs != nil {
		h.Write([]byte("etag:" + attrs.ETag))
	} else {
		fmt.Fprintf(h, "mtime:%d:%d", info.ModTime().UnixNano(), info.Size())
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Dir is the directory the copies are in.
func (c *Cache) Dir() string { return c.opts.Dir }

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Uncached: c.uncached.Load(),
		FetchedBytes: c.fetched.Load(), HitBytes: c.hitBytes.Load(),
		Evictions: c.evictions.Load(), Invalidations: c.invalidation.Load(),
		Entries: len(c.entries), Bytes: c.bytes, MaxBytes: c.opts.MaxBytes,
	}
}

// Get returns the path of a local copy of the object at location, which
// the table's metadata says has size bytes, fetching it through fsys on a
// miss. The copy stays on disk until the caller calls release (once).
//
// Its errors are *fs.PathError naming the location: the object is gone
// (fs.ErrNotExist), its size differs from size (ErrChanged), a fetch
// failed, or the file does not fit the cache now (ErrNotCached).
func (c *Cache) Get(ctx context.Context, fsys icebergio.IO, location string, size int64) (path string, release func(), err error) {
	info, err := stat(fsys, location)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // it names the location already, maybe differently
		}
		return "", nil, &fs.PathError{Op: "open", Path: location, Err: err}
	}
	if info.Size() != size {
		return "", nil, &fs.PathError{Op: "check", Path: location,
			Err: fmt.Errorf("%w: %d bytes on storage, the table's metadata says %d", ErrChanged, info.Size(), size)}
	}
	key, version := keyOf(location, size), versionOf(info)
	for {
		if err := ctx.Err(); err != nil {
			return "", nil, context.Cause(ctx)
		}
		e, wait, err := c.lookup(key, version, size)
		if err != nil {
			return "", nil, &fs.PathError{Op: "cache", Path: location, Err: err}
		}
		if e != nil {
			c.hits.Add(1)
			c.hitBytes.Add(uint64(size))
			return filepath.Join(c.opts.Dir, e.name()), c.releaser(e), nil
		}
		if wait != nil {
			// Another Get fetches it: take its copy when it is done.
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", nil, context.Cause(ctx)
			}
		}
		e, err = c.fill(ctx, fsys, location, key, version, size)
		if err != nil {
			return "", nil, err
		}
		c.misses.Add(1)
		return filepath.Join(c.opts.Dir, e.name()), c.releaser(e), nil
	}
}

// stat asks the store for the object's attributes.
func stat(fsys icebergio.IO, location string) (fs.FileInfo, error) {
	if s, ok := fsys.(icebergio.StatIO); ok {
		return s.Stat(location)
	}
	f, err := fsys.Open(location)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// lookup pins the copy of key at version if there is one. Otherwise it
// either returns a channel closed when another Get's fetch of key ends, or
// reserves size bytes and marks key in flight for the caller to fill.
func (c *Cache) lookup(key, version string, size int64) (hit *entry, wait <-chan struct{}, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		if e.version == version {
			c.pinLocked(e)
			return e, nil, nil
		}
		// The object was replaced (same size, other version).
		c.invalidation.Add(1)
		c.removeLocked(e)
	}
	if ch, ok := c.inflight[key]; ok {
		return nil, ch, nil
	}
	if size > c.opts.MaxBytes || !c.evictLocked(size) {
		c.uncached.Add(1)
		return nil, nil, ErrNotCached
	}
	c.bytes += size
	c.inflight[key] = make(chan struct{})
	return nil, nil, nil
}

// fill fetches the file into the reservation lookup made and adds it,
// pinned once for the caller.
func (c *Cache) fill(ctx context.Context, fsys icebergio.IO, location, key, version string, size int64) (*entry, error) {
	e := &entry{key: key, version: version, size: size, touched: time.Now()}
	err := c.fetch(ctx, fsys, location, filepath.Join(c.opts.Dir, e.name()), size)
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.inflight[key])
	delete(c.inflight, key)
	if err != nil {
		c.bytes -= size
		return nil, err
	}
	c.fetched.Add(uint64(size))
	e.pins = 1
	c.entries[key] = e
	return e, nil
}

// releaser returns the release function of one pin of e.
func (c *Cache) releaser(e *entry) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			e.pins--
			if e.pins > 0 {
				return
			}
			if e.stale {
				c.deleteLocked(e)
				return
			}
			c.idle.Add(e.key, e)
		})
	}
}

func (c *Cache) pinLocked(e *entry) {
	if e.pins == 0 {
		c.idle.Remove(e.key)
	}
	e.pins++
	if now := time.Now(); now.Sub(e.touched) > time.Minute {
		// The modification time orders copies after a restart.
		e.touched = now
		os.Chtimes(filepath.Join(c.opts.Dir, e.name()), now, now)
	}
}

// evictLocked drops idle copies, oldest first, until need more bytes fit;
// it reports whether they do.
func (c *Cache) evictLocked(need int64) bool {
	for c.bytes+need > c.opts.MaxBytes {
		_, e, ok := c.idle.GetOldest()
		if !ok {
			return false
		}
		c.evictions.Add(1)
		c.removeLocked(e)
	}
	return true
}

// removeLocked drops e from the index; its file goes now, or when its
// last reader releases it.
func (c *Cache) removeLocked(e *entry) {
	delete(c.entries, e.key)
	if e.pins > 0 {
		e.stale = true
		return
	}
	c.idle.Remove(e.key)
	c.deleteLocked(e)
}

func (c *Cache) deleteLocked(e *entry) {
	c.bytes -= e.size
	if cur, ok := c.entries[e.key]; ok && cur != e && cur.version == e.version {
		return // a newer copy of the same version took the file name
	}
	os.Remove(filepath.Join(c.opts.Dir, e.name()))
}

// drop removes an entry while the index is being rebuilt.
func (c *Cache) drop(e *entry) {
	c.idle.Remove(e.key)
	delete(c.entries, e.key)
	c.deleteLocked(e)
}
