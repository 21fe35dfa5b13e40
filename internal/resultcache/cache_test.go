package resultcache

import (
	"bytes"
	"testing"
)

func TestKeyDigestsParts(t *testing.T) {
	if NewKey("ab", "c") == NewKey("a", "bc") {
		t.Fatal("length prefixes: (ab, c) and (a, bc) must differ")
	}
	if NewKey("a", "b") != NewKey("a", "b") {
		t.Fatal("same parts, different keys")
	}
	k := NewKey("x")
	back, err := ParseKey(k.Full())
	if err != nil || back != k {
		t.Fatalf("ParseKey(Full) = %v, %v", back, err)
	}
	if _, err := ParseKey("zz"); err == nil {
		t.Fatal("ParseKey of garbage succeeded")
	}
}

func TestGetPutCounts(t *testing.T) {
	c, err := New(Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	k := NewKey("q")
	if _, ok := c.Get(k); ok {
		t.Fatal("hit in an empty cache")
	}
	if !c.Put(k, []byte("rows"), 1) {
		t.Fatal("Put refused a small entry")
	}
	e, ok := c.Get(k)
	if !ok || !bytes.Equal(e.IPC, []byte("rows")) || e.Rows != 1 {
		t.Fatalf("Get = %+v, %v", e, ok)
	}
	s := c.Stats()
	if s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || s.Bytes <= 4 || s.Stores != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Replacing is no eviction and keeps one entry.
	c.Put(k, []byte("rows"), 1)
	if s := c.Stats(); s.Entries != 1 || s.Evictions != 0 {
		t.Fatalf("after replace: %+v", s)
	}
	c.Purge()
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Evictions != 0 {
		t.Fatalf("after purge: %+v", s)
	}
}

func TestBoundedInBytes(t *testing.T) {
	c, err := New(Options{MaxBytes: 64 << 10, MaxEntryBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if c.Put(NewKey("big"), make([]byte, 17<<10), 1) {
		t.Fatal("kept an entry over MaxEntryBytes")
	}
	for i := range 20 {
		c.Put(NewKey("k", string(rune('a'+i))), make([]byte, 10<<10), 1)
		if s := c.Stats(); s.Bytes > s.MaxBytes {
			t.Fatalf("after %d puts: %d bytes over the bound %d", i+1, s.Bytes, s.MaxBytes)
		}
	}
	s := c.Stats()
	if s.Evictions == 0 || s.Entries >= 20 || s.Entries == 0 {
		t.Fatalf("stats %+v: want evictions and a few entries", s)
	}
	// The most recent entry stays, the first went.
	if _, ok := c.Get(NewKey("k", "t")); !ok {
		t.Fatal("the newest entry was evicted")
	}
	if _, ok := c.Get(NewKey("k", "a")); ok {
		t.Fatal("the oldest entry stayed")
	}
}

func TestNilAndOff(t *testing.T) {
	c, err := New(Options{MaxBytes: -1})
	if err != nil || c != nil {
		t.Fatalf("New(off) = %v, %v", c, err)
	}
	if c.Put(NewKey("a"), nil, 0) {
		t.Fatal("nil cache kept something")
	}
	if _, ok := c.Get(NewKey("a")); ok {
		t.Fatal("nil cache hit")
	}
	if (c.Stats() != Stats{}) {
		t.Fatal("nil cache counted")
	}
	if _, err := New(Options{MaxBytes: 10, MaxEntryBytes: 20}); err == nil {
		t.Fatal("MaxEntryBytes over MaxBytes accepted")
	}
}
