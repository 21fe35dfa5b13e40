package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/engine"
)

// directFixture is a fixture whose worker reads the local warehouse in
// place (the direct path), with conns idle connections in its fragment
// cache.
func directFixture(t *testing.T, conns int) *fixture {
	t.Helper()
	// The catalog's warehouse is a sibling of this folder.
	dirs := []string{filepath.Dir(t.TempDir())}
	eng, err := engine.Open(context.Background(), engine.Options{Threads: 2, MemoryLimit: "1GB", TempDir: t.TempDir() + "/spill", ReadDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *Options) { o.Engine, o.FragmentCacheConns = eng, conns })
	t.Cleanup(func() { eng.Close() }) // after the server's Close, which closes the idle connections
	return f
}

func fragmentStats(f *fixture) cachestats.Stats {
	for _, s := range f.srv.Caches().Snapshot() {
		if s.Name == "fragment" {
			return s
		}
	}
	f.t.Fatal("no fragment cache registered")
	return cachestats.Stats{}
}

// appendRows commits n more rows to tbl, ids from first.
func (f *fixture) appendRows(tbl *table.Table, first, n int) *table.Table {
	f.t.Helper()
	sc, err := table.SchemaToArrowSchema(testSchema, nil, false, false)
	if err != nil {
		f.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(sValue(i))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		f.t.Fatal(err)
	}
	defer rdr.Release()
	tbl, err = tbl.Append(f.ctx, rdr, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return tbl
}

// TestFragmentCacheReuse: a ticket run again takes the idle connection
// of the first run, with its views and prepared fragment, and answers
// alike without making a view; another fragment SQL, other columns and a
// new snapshot of the table each miss and answer for what changed.
func TestFragmentCacheReuse(t *testing.T) {
	f := directFixture(t, 0)
	const q = "SELECT count(*) AS n, sum(id) AS s FROM v"
	run := func(why string, sealed []byte, want string) {
		t.Helper()
		res := f.doGet(f.ctx, sealed)
		if res.err != nil {
			t.Fatalf("%s: %v", why, res.err)
		}
		if got := fmt.Sprint(res.rows); got != want {
			t.Errorf("%s: rows %s, want %s", why, got, want)
		}
	}
	expect := func(why string, hits, misses uint64) {
		t.Helper()
		if s := fragmentStats(f); s.Hits != hits || s.Misses != misses {
			t.Errorf("%s: fragment cache %d hits, %d misses; want %d, %d", why, s.Hits, s.Misses, hits, misses)
		}
	}
	n := filesOf * rowsPerFile
	want := fmt.Sprintf("[%d|%d]", n, n*(n-1)/2)
	sealed := f.seal(f.ticket(q, f.scanOf(f.tbl, "v", nil, nil, false)))
	run("first", sealed, want)
	expect("first", 0, 1)
	direct := f.srv.DirectScans()
	if direct != 1 {
		t.Fatalf("the first run made %d direct views, want 1 (is the direct path on?)", direct)
	}
	run("again", sealed, want)
	expect("again", 1, 1)
	if got := f.srv.DirectScans(); got != direct {
		t.Errorf("the second run made a view again (%d direct scans)", got)
	}
	if s := fragmentStats(f); s.Entries != 1 || s.MaxEntries != DefaultFragmentCacheConns {
		t.Errorf("one idle connection expected: %+v", s)
	}

	// Another fragment over the same view.
	run("another fragment", f.seal(f.ticket("SELECT max(id) AS m FROM v", f.scanOf(f.tbl, "v", nil, nil, false))),
		fmt.Sprintf("[%d]", n-1))
	expect("another fragment", 1, 2)
	// Other columns of the same table: another view.
	run("other columns", f.seal(f.ticket("SELECT count(*) AS n, sum(id) AS s FROM v", f.scanOf(f.tbl, "v", []string{"id"}, nil, false))), want)
	expect("other columns", 1, 3)

	// The table changed: a new snapshot with one more file.
	tbl := f.appendRows(f.tbl, n, 7)
	m := n + 7
	run("new snapshot", f.seal(f.ticket(q, f.scanOf(tbl, "v", nil, nil, false))), fmt.Sprintf("[%d|%d]", m, m*(m-1)/2))
	expect("new snapshot", 1, 4)
	// The old snapshot's ticket still reads the old files.
	run("old snapshot again", sealed, want)
	expect("old snapshot again", 2, 4)
}

// TestFragmentCacheConcurrent: tickets of one key at once each get a
// connection of their own and answer alike; the cache keeps one of them.
func TestFragmentCacheConcurrent(t *testing.T) {
	f := directFixture(t, 0)
	n := filesOf * rowsPerFile
	want := fmt.Sprintf("[%d|%d]", n, n*(n-1)/2)
	sealed := f.seal(f.ticket("SELECT count(*) AS n, sum(id) AS s FROM v", f.scanOf(f.tbl, "v", nil, nil, false)))
	var wg sync.WaitGroup
	got := make([]string, 6)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				res := f.doGet(f.ctx, sealed)
				if res.err != nil {
					got[i] = res.err.Error()
					return
				}
				got[i] = fmt.Sprint(res.rows)
			}
		}()
	}
	wg.Wait()
	if slices.ContainsFunc(got, func(g string) bool { return g != want }) {
		t.Fatalf("concurrent runs answered %v, want %s each", got, want)
	}
	if s := fragmentStats(f); s.Entries != 1 || s.Hits+s.Misses != 18 {
		t.Errorf("after 18 runs of one key: %+v", s)
	}
}

// TestFragmentCacheBound: past its bound the cache closes the least
// recently used idle connection; a cache turned off keeps none.
func TestFragmentCacheBound(t *testing.T) {
	f := directFixture(t, 1)
	a := f.seal(f.ticket("SELECT count(*) AS n FROM v", f.scanOf(f.tbl, "v", nil, nil, false)))
	b := f.seal(f.ticket("SELECT max(id) AS m FROM v", f.scanOf(f.tbl, "v", nil, nil, false)))
	for _, sealed := range [][]byte{a, b, a} {
		if res := f.doGet(f.ctx, sealed); res.err != nil {
			t.Fatal(res.err)
		}
	}
	if s := fragmentStats(f); s.Entries != 1 || s.Evictions != 2 || s.Hits != 0 {
		t.Errorf("a, b, a with room for one: %+v", s)
	}

	off := directFixture(t, -1)
	for _, s := range off.srv.Caches().Snapshot() {
		if s.Name == "fragment" {
			t.Errorf("a fragment cache turned off is registered: %+v", s)
		}
	}
	if res := off.doGet(off.ctx, off.seal(off.ticket("SELECT count(*) AS n FROM v", off.scanOf(off.tbl, "v", nil, nil, false)))); res.err != nil {
		t.Fatal(res.err)
	}
}
