package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/internal/cachestats"
)

// twoVersions returns two metadata locations of one table: before and
// after an append.
func twoVersions(t *testing.T) (first, second string) {
	t.Helper()
	_, tbl := newLocalTable(t, "typed", typedSchema)
	first = tbl.MetadataLocation()
	tbl = appendJSON(t, tbl, typedBatches[0])
	return first, tbl.MetadataLocation()
}

func wantStats(t *testing.T, c *MetadataCache, hits, misses uint64) {
	t.Helper()
	if h, m := c.Stats(); h != hits || m != misses {
		t.Fatalf("stats: %d hits %d misses, want %d %d", h, m, hits, misses)
	}
}

func TestMetadataCacheHitsAndMisses(t *testing.T) {
	ctx := context.Background()
	first, second := twoVersions(t)
	c := NewMetadataCache(0)
	ident := table.Identifier{"default", "typed"}

	a, err := c.Open(ctx, ident, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.CurrentSnapshot() != nil || a.MetadataLocation() != first {
		t.Fatalf("first version: snapshot %v at %s", a.CurrentSnapshot(), a.MetadataLocation())
	}
	wantStats(t, c, 0, 1)
	again, err := c.Open(ctx, table.Identifier{"other", "name"}, first, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	wantStats(t, c, 1, 1)
	if !again.Metadata().Equals(a.Metadata()) || again.Identifier()[0] != "other" {
		t.Fatalf("a hit must give the cached metadata under the caller's name, got %v", again.Identifier())
	}
	b, err := c.Open(ctx, ident, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.CurrentSnapshot() == nil {
		t.Fatal("second version has no snapshot")
	}
	wantStats(t, c, 1, 2)
	// The table a hit returns reads files.
	b, err = c.Open(ctx, ident, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStats(t, c, 2, 2)
	if n := countRows(t, b); n != 2 {
		t.Fatalf("read %d rows through a cached table, want 2", n)
	}
	if c.Len() != 2 {
		t.Fatalf("len %d, want 2", c.Len())
	}
}

func TestMetadataCacheEviction(t *testing.T) {
	ctx := context.Background()
	first, second := twoVersions(t)
	ident := table.Identifier{"default", "typed"}
	// Room for the larger version alone: the two never fit together.
	sizes := map[string]int64{}
	for _, loc := range []string{first, second} {
		one := NewMetadataCache(0)
		if _, err := one.Open(ctx, ident, loc, nil); err != nil {
			t.Fatal(err)
		}
		sizes[loc] = one.Bytes()
	}
	c := NewMetadataCache(max(sizes[first], sizes[second]))
	for _, loc := range []string{first, second, first, first} {
		if _, err := c.Open(ctx, ident, loc, nil); err != nil {
			t.Fatal(err)
		}
	}
	// first is evicted by second, read again, then hit.
	wantStats(t, c, 1, 3)
	if c.Len() != 1 || c.Bytes() != sizes[first] {
		t.Fatalf("len %d bytes %d, want 1 entry of %d bytes", c.Len(), c.Bytes(), sizes[first])
	}
	if s := c.Snapshot(); s.Evictions != 2 || s.MaxBytes != max(sizes[first], sizes[second]) {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestMetadataCacheTooLarge(t *testing.T) {
	ctx := context.Background()
	first, _ := twoVersions(t)
	c := NewMetadataCache(10)
	ident := table.Identifier{"default", "typed"}
	for range 2 {
		if _, err := c.Open(ctx, ident, first, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Served, never kept.
	wantStats(t, c, 0, 2)
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("len %d bytes %d, want nothing kept", c.Len(), c.Bytes())
	}
}

func TestMetadataCacheLoadsOnce(t *testing.T) {
	ctx := context.Background()
	first, _ := twoVersions(t)
	c := NewMetadataCache(0)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Open(ctx, table.Identifier{"default", "typed"}, first, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantStats(t, c, 15, 1)
}

func TestMetadataCacheErrors(t *testing.T) {
	ctx := context.Background()
	first, _ := twoVersions(t)
	c := NewMetadataCache(0)
	missing := first + ".missing.metadata.json"
	for range 2 {
		_, err := c.Open(ctx, table.Identifier{"t"}, missing, nil)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing metadata: %v", err)
		}
	}
	// Errors are not cached.
	wantStats(t, c, 0, 2)
	// A caller whose context ends stops waiting; it never gets a table
	// without an error or a different error.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if tbl, err := c.Open(cancelled, table.Identifier{"t"}, first, nil); err != nil && !errors.Is(err, context.Canceled) || err == nil && tbl == nil {
		t.Fatalf("cancelled: %v, %v", tbl, err)
	}
}

func countRows(t *testing.T, tbl *table.Table) int64 {
	t.Helper()
	_, _, rows := readSchemas(t, tbl, 0, nil)
	return rows
}

// TestMountsLoadThroughCache: a table of the embedded SQL catalog is
// loaded by looking its metadata location up and reading the metadata
// through the cache; a commit moves the location, so the next load sees
// it; a table loaded so commits.
func TestMountsLoadThroughCache(t *testing.T) {
	ctx := context.Background()
	cat, tbl := newLocalTable(t, "typed", typedSchema)
	m := NewMounts()
	if err := m.Mount("local", cat, nil); err != nil {
		t.Fatal(err)
	}
	ref := TableRef{Catalog: "local", Schema: DefaultSchema, Table: "typed"}
	load := func() *Pinned {
		t.Helper()
		p, err := m.LoadTable(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := load()
	if first.MetadataLocation != tbl.MetadataLocation() {
		t.Fatalf("pinned %s, catalog says %s", first.MetadataLocation, tbl.MetadataLocation())
	}
	load()
	if s := m.Cache().Snapshot(); s.Misses != 1 || s.Hits != 1 {
		t.Fatalf("two loads of one version: %+v", s)
	}
	// Commit through the loaded table, then load again.
	next := appendJSON(t, first.Table, typedBatches[0])
	p := load()
	if p.MetadataLocation != next.MetadataLocation() || p.Table.CurrentSnapshot() == nil {
		t.Fatalf("after a commit: pinned %s, want %s", p.MetadataLocation, next.MetadataLocation())
	}
	if s := m.Cache().Snapshot(); s.Misses != 2 {
		t.Fatalf("a new version was not read: %+v", s)
	}
	// Manifests are read through the cache when planning.
	plan := func() int {
		tasks, err := m.Cache().PlanningTable(p.Table).Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks)
	}
	if n := plan(); n != 1 || plan() != 1 {
		t.Fatalf("%d tasks", n)
	}
	if s := m.Cache().Snapshot(); s.Files.Misses != 2 || s.Files.Hits != 2 {
		t.Fatalf("manifest list and manifest, twice: %+v", s.Files)
	}
	// A missing table is the catalog's own error.
	if _, err := m.LoadTable(ctx, TableRef{Catalog: "local", Schema: DefaultSchema, Table: "nope"}); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("missing table: %v", err)
	}
}

// TestMemo: a value is loaded once per key and errors are not kept.
func TestMemo(t *testing.T) {
	c := NewMetadataCache(1 << 20)
	ctx := context.Background()
	calls := 0
	load := func(context.Context) (any, error) { calls++; return calls, nil }
	for i := 0; i < 3; i++ {
		if v, err := c.Memo(ctx, "k", load); err != nil || v.(int) != 1 {
			t.Fatalf("memo: %v %v", v, err)
		}
	}
	boom := errors.New("boom")
	if _, err := c.Memo(ctx, "e", func(context.Context) (any, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if v, err := c.Memo(ctx, "e", load); err != nil || v.(int) != 2 {
		t.Fatalf("after an error: %v %v", v, err)
	}
	if s := c.Snapshot(); s.Memos.Hits != 2 || s.Memos.Misses != 3 || s.Hits != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestMetadataCacheEncryptedIO: a table key in props wraps the IO of the
// tables Open and Load return, on a miss and on a hit alike; without one
// the IO is the store's own.
func TestMetadataCacheEncryptedIO(t *testing.T) {
	ctx := context.Background()
	first, _ := twoVersions(t)
	c := NewMetadataCache(0)
	ident := table.Identifier{"default", "typed"}
	key := tablecrypt.EncodeKey(make([]byte, 32))
	props := map[string]string{tablecrypt.TableKeyProp: key}
	isCrypt := func(tbl *table.Table) bool {
		t.Helper()
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := fsys.(*tablecrypt.FS)
		return ok
	}
	for i, open := range []func() (*table.Table, error){
		func() (*table.Table, error) { return c.Open(ctx, ident, first, props) }, // miss
		func() (*table.Table, error) { return c.Load(ctx, ident, first, props, nil) },
	} {
		tbl, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if !isCrypt(tbl) {
			t.Fatalf("open %d: the table key did not wrap the IO", i)
		}
	}
	wantStats(t, c, 1, 1)
	plain, err := c.Open(ctx, ident, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if isCrypt(plain) {
		t.Fatal("no table key, yet the IO is wrapped")
	}
	if _, err := c.Open(ctx, ident, first, map[string]string{tablecrypt.TableKeyProp: "not base64!"}); err == nil {
		t.Fatal("a bad table key opened")
	}
}

// TestMemoClasses: each memo class is counted apart (entries, bytes,
// hits, misses, evictions) within the shared bound, and "metadata" counts
// the rest.
func TestMemoClasses(t *testing.T) {
	c := NewMetadataCache(64 << 10)
	ctx := context.Background()
	if _, ok := c.Recall("plan\x00q1"); ok {
		t.Fatal("recalled what was never remembered")
	}
	c.Remember("plan\x00q1", "bound")
	if _, ok := c.Recall("plan\x00q1"); !ok {
		t.Fatal("a remembered plan is not recalled")
	}
	for range 2 {
		if _, err := c.Memo(ctx, "scan\x00t", func(context.Context) (any, error) { return "tasks", nil }); err != nil {
			t.Fatal(err)
		}
	}
	byName := map[string]cachestats.Stats{}
	for _, s := range c.CacheStats() {
		byName[s.Name] = s
	}
	plan, scan, meta := byName["plan"], byName["scan"], byName["metadata"]
	if plan.Hits != 1 || plan.Misses != 1 || plan.Entries != 1 || plan.Bytes <= 0 || plan.MaxBytes != 64<<10 {
		t.Errorf("plan: %+v", plan)
	}
	if scan.Hits != 1 || scan.Misses != 1 || scan.Entries != 1 {
		t.Errorf("scan: %+v", scan)
	}
	if meta.Entries != 0 || meta.Bytes != 0 {
		t.Errorf("metadata holds memos: %+v", meta)
	}
	// Fill the bound with plans: the evictions are the plan cache's.
	big := strings.Repeat("x", 8<<10)
	for i := range 20 {
		c.Remember(fmt.Sprintf("plan\x00big%d", i), big+fmt.Sprint(i))
	}
	byName = map[string]cachestats.Stats{}
	for _, s := range c.CacheStats() {
		byName[s.Name] = s
	}
	plan = byName["plan"]
	if plan.Evictions == 0 || plan.Bytes+byName["scan"].Bytes > 64<<10 || plan.Bytes+byName["scan"].Bytes != c.Bytes() {
		t.Errorf("after filling the cache with plans: plan %+v, scan %+v, cache %d bytes", plan, byName["scan"], c.Bytes())
	}
	c.Forget("plan\x00big19")
	if s := c.CacheStats(); s[1].Name != "plan" || s[1].Entries != plan.Entries-1 {
		t.Errorf("after Forget: %+v, before %+v", s[1], plan)
	}
}
