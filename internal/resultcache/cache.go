package resultcache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/icefloe/icefloe/internal/memsize"
)

// Defaults for Options.
const (
	// DefaultMaxBytes bounds what all entries hold together.
	DefaultMaxBytes = 64 << 20
	// DefaultMaxEntryBytes bounds one entry: a larger result is not
	// kept. A hit is answered inside its ticket (the client reads it from
	// the coordinator with no worker call), so an entry stays well under
	// the 4 MiB a gRPC message may have by default.
	DefaultMaxEntryBytes = 1 << 20
)

// Options configure a Cache.
type Options struct {
	// MaxBytes bounds the bytes all entries hold; 0 means
	// DefaultMaxBytes, negative turns the cache off.
	MaxBytes int64
	// MaxEntryBytes bounds one entry's result bytes; 0 means
	// DefaultMaxEntryBytes.
	MaxEntryBytes int64
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.MaxEntryBytes < 0 {
		errs = append(errs, fmt.Errorf("resultcache: MaxEntryBytes %d is negative", o.MaxEntryBytes))
	}
	if o.MaxBytes > 0 && o.MaxEntryBytes > o.MaxBytes {
		errs = append(errs, fmt.Errorf("resultcache: MaxEntryBytes %d exceeds MaxBytes %d", o.MaxEntryBytes, o.MaxBytes))
	}
	return errors.Join(errs...)
}

// Key names one result. Build it with NewKey from the parts the answer
// depends on; its String is a digest, safe to print (it says nothing of
// the parts).
type Key struct{ sum [sha256.Size]byte }

// NewKey digests parts, each length-prefixed so that no two lists of
// parts give the same bytes.
func NewKey(parts ...string) Key {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	var k Key
	h.Sum(k.sum[:0])
	return k
}

// String is the key's digest in hex, shortened for EXPLAIN.
func (k Key) String() string { return hex.EncodeToString(k.sum[:8]) }

// Full is the whole digest in hex.
func (k Key) Full() string { return hex.EncodeToString(k.sum[:]) }

// ParseKey reads a key back from Full.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(k.sum) {
		return k, fmt.Errorf("resultcache: bad key %q", s)
	}
	copy(k.sum[:], b)
	return k, nil
}

// Entry is one kept result. Its fields are never changed once stored:
// callers may read them without a lock and must not write them.
type Entry struct {
	// IPC is the result as one Arrow IPC stream (schema, then batches).
	IPC []byte
	// Rows is how many rows the result has.
	Rows int64
	// Stored is when the result was kept.
	Stored time.Time
	bytes  int64
}

// Age is how long ago the entry was kept.
func (e *Entry) Age() time.Duration { return time.Since(e.Stored) }

// Stats are the cache's counters, for metrics and system.runtime.caches.
type Stats struct {
	Hits, Misses    uint64
	Stores          uint64
	Evictions       uint64
	Entries         int
	Bytes, MaxBytes int64
}

// Cache is a byte-bounded LRU of results. Safe for concurrent use; a nil
// *Cache keeps nothing and counts nothing.
type Cache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[Key, *Entry]
	bytes int64
	// dropping: entries leave by Put's replacement or Purge, not by
	// the byte bound (not counted as evictions). Guarded by mu.
	dropping bool
	max      int64
	maxEntry int64

	hits, misses, stores, evictions atomic.Uint64
}

// New returns a cache bounded by o; nil (no cache) when o.MaxBytes is
// negative.
func New(o Options) (*Cache, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MaxBytes < 0 {
		return nil, nil
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes == 0 {
		o.MaxEntryBytes = min(int64(DefaultMaxEntryBytes), o.MaxBytes)
	}
	c := &Cache{max: o.MaxBytes, maxEntry: o.MaxEntryBytes}
	// The byte bound evicts; the count bound of simplelru is only there
	// because it wants one.
	l, err := simplelru.NewLRU[Key, *Entry](1<<30, func(_ Key, e *Entry) {
		c.bytes -= e.bytes
		if !c.dropping {
			c.evictions.Add(1)
		}
	})
	if err != nil {
		return nil, err
	}
	c.lru = l
	return c, nil
}

// MaxEntryBytes is the largest result the cache keeps (0 for a nil
// cache): a caller stops copying a result once it grows past it.
func (c *Cache) MaxEntryBytes() int64 {
	if c == nil {
		return 0
	}
	return c.maxEntry
}

// Get returns the entry under k and counts a hit or a miss.
func (c *Cache) Get(k Key) (*Entry, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return e, ok
}

// Put keeps ipc (an Arrow IPC stream of rows rows) under k, evicting the
// least recently used entries past the byte bound. A result over
// MaxEntryBytes is not kept; Put reports whether it was. The cache owns
// ipc afterwards.
func (c *Cache) Put(k Key, ipc []byte, rows int64) bool {
	if c == nil || int64(len(ipc)) > c.maxEntry {
		return false
	}
	e := &Entry{IPC: ipc, Rows: rows, Stored: time.Now()}
	e.bytes = memsize.Of(e) + int64(len(k.sum))
	c.mu.Lock()
	defer c.mu.Unlock()
	// Same key, same answer: the newer entry replaces the older one.
	c.dropping = true
	c.lru.Remove(k)
	c.dropping = false
	c.lru.Add(k, e)
	c.bytes += e.bytes
	for c.bytes > c.max {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	c.stores.Add(1)
	return true
}

// Purge drops every entry.
func (c *Cache) Purge() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropping = true
	c.lru.Purge()
	c.dropping = false
}

// Stats returns the cache's counters now.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	s := Stats{Entries: c.lru.Len(), Bytes: c.bytes, MaxBytes: c.max}
	c.mu.Unlock()
	s.Hits, s.Misses, s.Stores, s.Evictions = c.hits.Load(), c.misses.Load(), c.stores.Load(), c.evictions.Load()
	return s
}
