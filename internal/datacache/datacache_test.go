package datacache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// countingIO is a store whose files are local, counting the ranged reads
// of the files it opened.
type countingIO struct {
	icebergio.LocalFS
	reads atomic.Int64
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	f, err := c.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, reads: &c.reads}, nil
}

type countingFile struct {
	icebergio.File
	reads *atomic.Int64
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(p, off)
}

// store writes n random bytes as an object of the store and returns its
// location and content.
func store(t *testing.T, dir, name string, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(name))))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + path, data
}

func open(t *testing.T, dir string, max int64) *Cache {
	t.Helper()
	c, err := Open(Options{Dir: dir, MaxBytes: max, ChunkBytes: 1000, Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustGet(t *testing.T, c *Cache, fsys icebergio.IO, loc string, size int) (string, func()) {
	t.Helper()
	path, release, err := c.Get(context.Background(), fsys, loc, int64(size))
	if err != nil {
		t.Fatalf("get %s: %v", loc, err)
	}
	return path, release
}

func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("copy %s differs from the object (%d vs %d bytes)", path, len(got), len(want))
	}
}

// TestMissThenHit: the first Get fetches the file with ranged reads of
// ChunkBytes, the second is served from disk; the counters say so.
func TestMissThenHit(t *testing.T) {
	remote, dir := t.TempDir(), t.TempDir()
	loc, data := store(t, remote, "a.parquet", 10_500)
	fsys := &countingIO{}
	c := open(t, dir, 1<<20)
	path, release := mustGet(t, c, fsys, loc, len(data))
	sameFile(t, path, data)
	release()
	if got := fsys.reads.Load(); got != 11 {
		t.Fatalf("ranged reads: %d, want 11 of at most 1000 bytes", got)
	}
	path2, release := mustGet(t, c, fsys, loc, len(data))
	release()
	if path2 != path || fsys.reads.Load() != 11 {
		t.Fatalf("second get: %s (first %s), %d reads", path2, path, fsys.reads.Load())
	}
	s := c.Stats()
	if s.Hits != 1 || s.Misses != 1 || s.FetchedBytes != uint64(len(data)) || s.HitBytes != uint64(len(data)) ||
		s.Entries != 1 || s.Bytes != int64(len(data)) {
		t.Fatalf("stats %+v", s)
	}
}

// TestConcurrentGets: many readers of one cold file fetch it once.
func TestConcurrentGets(t *testing.T) {
	remote := t.TempDir()
	loc, data := store(t, remote, "a.parquet", 50_000)
	fsys := &countingIO{}
	c := open(t, t.TempDir(), 1<<20)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, release, err := c.Get(context.Background(), fsys, loc, int64(len(data)))
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			sameFile(t, path, data)
		}()
	}
	wg.Wait()
	if s := c.Stats(); s.Misses != 1 || s.Hits != 15 || fsys.reads.Load() != 50 {
		t.Fatalf("stats %+v, %d reads", s, fsys.reads.Load())
	}
}

// TestEviction: the bound holds; least recently used copies go first;
// pinned copies are never evicted, and a file that cannot fit is
// ErrNotCached.
func TestEviction(t *testing.T) {
	remote := t.TempDir()
	var locs []string
	for i := 0; i < 4; i++ {
		loc, _ := store(t, remote, fmt.Sprintf("f%d.parquet", i), 1000)
		locs = append(locs, loc)
	}
	fsys := icebergio.LocalFS{}
	c := open(t, t.TempDir(), 2500)
	_, r0 := mustGet(t, c, fsys, locs[0], 1000)
	_, r1 := mustGet(t, c, fsys, locs[1], 1000)
	r1()
	r0()
	// f0 was released last but used first: f1... touch f0 again so f1 is
	// the least recently used.
	_, r0 = mustGet(t, c, fsys, locs[0], 1000)
	r0()
	_, r2 := mustGet(t, c, fsys, locs[2], 1000) // evicts f1
	if s := c.Stats(); s.Evictions != 1 || s.Bytes != 2000 || s.Entries != 2 {
		t.Fatalf("after f2: %+v", s)
	}
	before := c.Stats().Misses
	_, r0 = mustGet(t, c, fsys, locs[0], 1000)
	if c.Stats().Misses != before {
		t.Fatal("f0 was evicted instead of f1")
	}
	// f0 and f2 are pinned: f3 does not fit.
	if _, _, err := c.Get(context.Background(), fsys, locs[3], 1000); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), locs[3]) {
		t.Fatalf("f3 with everything pinned: %v", err)
	}
	r2()
	_, r3 := mustGet(t, c, fsys, locs[3], 1000) // evicts f2, never the pinned f0
	r3()
	r0()
	if s := c.Stats(); s.Evictions != 2 || s.Bytes > 2500 || s.Uncached != 1 {
		t.Fatalf("final: %+v", s)
	}
	if _, _, err := c.Get(context.Background(), fsys, locs[3], 3000); err == nil {
		t.Fatal("a wrong size was accepted")
	}
	big, data := store(t, remote, "big.parquet", 3000)
	if _, _, err := c.Get(context.Background(), fsys, big, int64(len(data))); !errors.Is(err, ErrNotCached) {
		t.Fatalf("file larger than the bound: %v", err)
	}
}

// TestChangedUnderneath: a deleted object fails naming it; a size that no
// longer matches the metadata is ErrChanged; a replaced object of the same
// size is fetched again, never served stale.
func TestChangedUnderneath(t *testing.T) {
	remote := t.TempDir()
	loc, data := store(t, remote, "a.parquet", 2000)
	fsys := icebergio.LocalFS{}
	c := open(t, t.TempDir(), 1<<20)
	_, release := mustGet(t, c, fsys, loc, len(data))
	release()
	osPath := strings.TrimPrefix(loc, "file://")

	// Same size, new content and modification time.
	fresh := bytes.Repeat([]byte{7}, len(data))
	if err := os.WriteFile(osPath, fresh, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(osPath, later, later)
	path, release := mustGet(t, c, fsys, loc, len(data))
	sameFile(t, path, fresh)
	release()
	if s := c.Stats(); s.Invalidations != 1 || s.Misses != 2 || s.Entries != 1 || s.Bytes != int64(len(data)) {
		t.Fatalf("after replace: %+v", s)
	}

	if err := os.WriteFile(osPath, data[:1500], 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Get(context.Background(), fsys, loc, int64(len(data)))
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), loc) {
		t.Fatalf("shorter object: %v", err)
	}

	os.Remove(osPath)
	_, _, err = c.Get(context.Background(), fsys, loc, int64(len(data)))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), loc) {
		t.Fatalf("deleted object: %v", err)
	}
}

// TestRestart: a reopened cache serves its copies without fetching,
// discards temporary and damaged files, and keeps the recency order.
func TestRestart(t *testing.T) {
	remote, dir := t.TempDir(), t.TempDir()
	fsys := &countingIO{}
	c := open(t, dir, 1<<20)
	var locs []string
	var datas [][]byte
	for i := 0; i < 3; i++ {
		loc, data := store(t, remote, fmt.Sprintf("f%d.parquet", i), 1500)
		_, release := mustGet(t, c, fsys, loc, len(data))
		release()
		locs, datas = append(locs, loc), append(datas, data)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	if len(names) != 3 {
		t.Fatalf("copies: %v", names)
	}
	// f0 is the oldest by use.
	old := time.Now().Add(-time.Hour)
	for i, n := range names {
		if strings.HasPrefix(filepath.Base(n), keyOf(locs[0], 1500)) {
			os.Chtimes(n, old, old)
		} else {
			os.Chtimes(n, old.Add(time.Duration(i+1)*time.Minute), old.Add(time.Duration(i+1)*time.Minute))
		}
	}
	// An interrupted fetch and a truncated copy.
	os.WriteFile(filepath.Join(dir, "tmp-123"), []byte("partial"), 0o600)
	damaged := keyOf("file:///x", 99) + "-0123456789abcdef.data"
	os.WriteFile(filepath.Join(dir, damaged), []byte("short"), 0o600)
	os.WriteFile(filepath.Join(dir, "stranger"), []byte("?"), 0o600)

	reads := fsys.reads.Load()
	c2 := open(t, dir, 3200) // room for two: the oldest goes
	if _, err := os.Stat(filepath.Join(dir, "tmp-123")); !os.IsNotExist(err) {
		t.Fatal("temporary file kept")
	}
	if _, err := os.Stat(filepath.Join(dir, damaged)); !os.IsNotExist(err) {
		t.Fatal("damaged copy kept")
	}
	if s := c2.Stats(); s.Entries != 2 || s.Bytes != 3000 || s.Evictions != 1 {
		t.Fatalf("reopened: %+v", s)
	}
	for i := 1; i < 3; i++ {
		path, release := mustGet(t, c2, fsys, locs[i], 1500)
		sameFile(t, path, datas[i])
		release()
	}
	if fsys.reads.Load() != reads || c2.Stats().Hits != 2 {
		t.Fatalf("reopened cache fetched again: %+v", c2.Stats())
	}
}

// TestIO: iceberg-go's reads of listed files go through the cache;
// others pass through.
func TestIO(t *testing.T) {
	remote := t.TempDir()
	loc, data := store(t, remote, "a.parquet", 3000)
	other, odata := store(t, remote, "b.parquet", 100)
	c := open(t, t.TempDir(), 1<<20)
	fsys := c.IO(context.Background(), icebergio.LocalFS{}, map[string]int64{loc: int64(len(data))})
	for i := 0; i < 2; i++ {
		for _, f := range []struct {
			loc  string
			want []byte
		}{{loc, data}, {other, odata}} {
			r, err := fsys.Open(f.loc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, f.want) {
				t.Fatalf("read %s: %v", f.loc, err)
			}
		}
	}
	if s := c.Stats(); s.Misses != 1 || s.Hits != 1 || s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Released on Close: the copy can be evicted again.
	c.mu.Lock()
	idle := c.idle.Len()
	c.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle copies after Close, want 1", idle)
	}
}

// TestStoreWithoutStat: a store without Stat is asked by opening the file
// (iceberg-go's in-memory store).
func TestStoreWithoutStat(t *testing.T) {
	mem := icebergio.NewMemFS()
	data := bytes.Repeat([]byte("abc"), 1000)
	if err := mem.WriteFile("mem://bucket/a.parquet", data); err != nil {
		t.Fatal(err)
	}
	c := open(t, t.TempDir(), 1<<20)
	path, release := mustGet(t, c, mem, "mem://bucket/a.parquet", len(data))
	defer release()
	sameFile(t, path, data)
}

func TestValidate(t *testing.T) {
	err := Options{Dir: "relative", MaxBytes: -1, ChunkBytes: -1, Parallelism: -1}.Validate()
	for _, want := range []string{"absolute", "MaxBytes", "ChunkBytes", "Parallelism"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %s", err, want)
		}
	}
	if err := (Options{}).Validate(); err == nil || !strings.Contains(err.Error(), "Dir is required") {
		t.Errorf("empty: %v", err)
	}
}
