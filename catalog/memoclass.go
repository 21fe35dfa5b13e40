package catalog

import (
	"slices"
	"strings"

	"github.com/icefloe/icefloe/internal/cachestats"
)

// Memo classes. A memo key starts with its class, a word ended by NUL
// ("scan\x00…", "plan\x00…"): each class is one cache of its own in the
// counters (CacheStats), while all share the one byte bound and LRU
// order, so what a process keeps stays within MaxBytes whichever class
// is busy.

// classCounters are one memo class's counters; the MetadataCache's mu
// guards them.
type classCounters struct {
	hits, misses, evictions uint64
	entries                 int
	bytes                   int64
}

// memoClass is the class of a full entry key (kind prefix included), or
// "" for an entry that is no memo.
func memoClass(key string) string {
	rest, ok := strings.CutPrefix(key, kindPrefix[kindMemo])
	if !ok {
		return ""
	}
	return keyClass(rest)
}

// keyClass is the class of a memo key (no kind prefix).
func keyClass(key string) string {
	if i := strings.IndexByte(key, 0); i > 0 {
		return key[:i]
	}
	return "memo"
}

// class returns the counters of a class, made on first use; c.mu is held.
func (c *MetadataCache) class(name string) *classCounters {
	cc := c.classes[name]
	if cc == nil {
		cc = &classCounters{}
		c.classes[name] = cc
	}
	return cc
}

// countClass counts a lookup of a memo key in its class.
func (c *MetadataCache) countClass(key string, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.class(keyClass(key))
	if hit {
		cc.hits++
	} else {
		cc.misses++
	}
}

// CacheStats reports the cache as cachestats Sources see it: "metadata"
// for table metadata, manifest lists and manifests, then one cache per
// memo class, each with the shared bound as its MaxBytes.
func (c *MetadataCache) CacheStats() []cachestats.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	meta := cachestats.Stats{Name: "metadata", MaxBytes: c.max, Entries: len(c.entries), Bytes: c.bytes,
		Evictions: c.evicted}
	for _, k := range []kind{kindMetadata, kindFile} {
		meta.Hits += c.kinds[k].hits.Load()
		meta.Misses += c.kinds[k].misses.Load()
	}
	var memos []cachestats.Stats
	for name, cc := range c.classes {
		meta.Entries -= cc.entries
		meta.Bytes -= cc.bytes
		meta.Evictions -= cc.evictions
		memos = append(memos, cachestats.Stats{Name: name, MaxBytes: c.max, Entries: cc.entries, Bytes: cc.bytes,
			Hits: cc.hits, Misses: cc.misses, Evictions: cc.evictions})
	}
	slices.SortFunc(memos, func(a, b cachestats.Stats) int { return strings.Compare(a.Name, b.Name) })
	return append([]cachestats.Stats{meta}, memos...)
}
