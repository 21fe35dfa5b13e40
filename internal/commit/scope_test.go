package commit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// longFile is a data file of rows count whose column 1 (id, long) lies
// in [lo, hi], as a writer's metrics say; no bytes are ever read.
func longFile(t *testing.T, name string, lo, hi int64, count int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
		"file:///warehouse/data/"+name+".parquet", iceberg.ParquetFile, nil, nil, nil, count, 100)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	return b.LowerBoundValues(map[int][]byte{1: enc(lo)}).UpperBoundValues(map[int][]byte{1: enc(hi)}).
		ValueCounts(map[int]int64{1: count}).NullValueCounts(map[int]int64{1: 0}).Build()
}

// writer commits to the table the way another engine or coordinator
// would: straight through iceberg-go, not through Run.
type writer struct {
	t     *testing.T
	cat   icecat.Catalog
	ident table.Identifier
}

func (w writer) load() *table.Table {
	w.t.Helper()
	tbl, err := w.cat.LoadTable(context.Background(), w.ident)
	if err != nil {
		w.t.Fatal(err)
	}
	return tbl
}

func (w writer) commit(change func(tx *table.Transaction) error) *table.Table {
	w.t.Helper()
	tx := w.load().NewTransaction()
	if err := change(tx); err != nil {
		w.t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return tbl
}

func (w writer) add(files ...iceberg.DataFile) *table.Table {
	return w.commit(func(tx *table.Transaction) error {
		return tx.AddDataFiles(context.Background(), files, nil, table.WithoutDuplicateCheck())
	})
}

func (w writer) replace(old, added []iceberg.DataFile) *table.Table {
	return w.commit(func(tx *table.Transaction) error {
		return tx.ReplaceDataFilesWithDataFiles(context.Background(), old, added, nil)
	})
}

func (w writer) setProps(props iceberg.Properties) {
	w.commit(func(tx *table.Transaction) error { return tx.SetProperties(props) })
}

// conflictIn reports whether err is a conflict whose message holds want.
func conflictIn(err error, want string) bool {
	return errors.Is(err, ErrConflict) && strings.Contains(err.Error(), want)
}

// The scope check against commits made after the statement read the
// table: appends outside the filter never conflict; under serializable
// an added file that may match does, under snapshot it does not; a
// concurrent removal of a rewritten file conflicts at both levels.
func TestScopeCheck(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	f1, f2 := longFile(t, "f1", 1, 1, 1), longFile(t, "f2", 2, 2, 1)
	read := w.add(f1, f2)
	base := read.CurrentSnapshot().SnapshotID
	scope := func() *scopeCheck {
		return newScopeCheck(&Scope{Op: OpDelete, Base: base, Filter: iceberg.EqualTo(iceberg.Reference("id"), int64(1)), Rewritten: []iceberg.DataFile{f1}}, "")
	}

	// Nothing concurrent, then appends of other keys (one spanning the
	// key's neighbours but not the key itself: 3..9).
	if err := scope().check(ctx, read); err != nil {
		t.Fatalf("no concurrent commit: %v", err)
	}
	w.add(longFile(t, "f3", 3, 3, 1))
	w.add(longFile(t, "f4", 3, 9, 5), longFile(t, "empty", 1, 1, 0))
	if err := scope().check(ctx, w.load()); err != nil {
		t.Fatalf("appends of other rows: %v", err)
	}

	// An append that may hold id 1: a conflict under serializable (the
	// default), not under snapshot isolation.
	w.add(longFile(t, "f5", 0, 4, 3))
	if err := scope().check(ctx, w.load()); !conflictIn(err, "f5.parquet") || !conflictIn(err, "serializable") {
		t.Fatalf("append of a matching row under serializable: %v", err)
	}
	w.setProps(iceberg.Properties{DeleteIsolationKey: "snapshot"})
	if err := scope().check(ctx, w.load()); err != nil {
		t.Fatalf("append of a matching row under snapshot isolation: %v", err)
	}
	w.setProps(iceberg.Properties{DeleteIsolationKey: "serialisable"})
	if err := scope().check(ctx, w.load()); !errors.Is(err, ErrIsolation) {
		t.Fatalf("a misspelt isolation level: %v", err)
	}
	w.setProps(iceberg.Properties{DeleteIsolationKey: "snapshot"})

	// Another statement rewrote f2 (not ours): fine. Then f1: a conflict
	// even under snapshot isolation.
	w.replace([]iceberg.DataFile{f2}, []iceberg.DataFile{longFile(t, "f2b", 2, 2, 1)})
	if err := scope().check(ctx, w.load()); err != nil {
		t.Fatalf("a concurrent rewrite of another file: %v", err)
	}
	w.replace([]iceberg.DataFile{f1}, []iceberg.DataFile{longFile(t, "f1b", 1, 1, 1)})
	if err := scope().check(ctx, w.load()); !conflictIn(err, "f1.parquet") || !conflictIn(err, "rewrote") {
		t.Fatalf("a concurrent rewrite of the rewritten file: %v", err)
	}
}

// A check that passed is not repeated: the next attempt checks only the
// snapshots added since.
func TestScopeCheckIsIncremental(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	read := w.add(longFile(t, "f1", 1, 1, 1))
	c := newScopeCheck(&Scope{Op: OpUpdate, Base: read.CurrentSnapshot().SnapshotID, Filter: iceberg.EqualTo(iceberg.Reference("id"), int64(1))}, "")
	w.add(longFile(t, "f2", 2, 2, 1))
	now := w.load()
	if err := c.check(ctx, now); err != nil {
		t.Fatal(err)
	}
	if c.passed != now.CurrentSnapshot().SnapshotID {
		t.Fatalf("passed %d, want the head %d", c.passed, now.CurrentSnapshot().SnapshotID)
	}
	w.add(longFile(t, "f3", 1, 1, 1))
	if err := c.check(ctx, w.load()); !conflictIn(err, "f3.parquet") {
		t.Fatalf("a matching append after the last check: %v", err)
	}
}

// Equality deletes remove every older row with their keys whatever the
// isolation level: a concurrent file that may hold a key conflicts under
// snapshot isolation too. A concurrent delete file against a rewritten
// file conflicts; AppendsOnly refuses anything but appends.
func TestScopeKeysDeletesAndAppendsOnly(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	w.setProps(iceberg.Properties{DeleteIsolationKey: "snapshot"})
	f1 := longFile(t, "f1", 1, 5, 5)
	read := w.add(f1)
	base := read.CurrentSnapshot().SnapshotID

	keys := newScopeCheck(&Scope{Op: OpDelete, Base: base, Keys: iceberg.IsIn(iceberg.Reference("id"), int64(7))}, "")
	w.add(longFile(t, "f2", 8, 9, 2))
	if err := keys.check(ctx, w.load()); err != nil {
		t.Fatalf("append without the key: %v", err)
	}
	w.add(longFile(t, "f3", 6, 9, 2))
	if err := keys.check(ctx, w.load()); !conflictIn(err, "f3.parquet") || !conflictIn(err, "equality deletes") {
		t.Fatalf("append that may hold a deleted key, snapshot isolation: %v", err)
	}

	appends := newScopeCheck(&Scope{Op: OpRewrite, Base: base, Rewritten: []iceberg.DataFile{f1}, AppendsOnly: true}, "")
	if err := appends.check(ctx, w.load()); err != nil {
		t.Fatalf("appends only: %v", err)
	}
	rewrite := newScopeCheck(&Scope{Op: OpUpdate, Base: base, Rewritten: []iceberg.DataFile{f1}}, "")
	pos, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes,
		"file:///warehouse/data/pos.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	w.commit(func(tx *table.Transaction) error {
		return tx.NewRowDelta(nil).AddDeletes(pos.ReferencedDataFile(f1.FilePath()).Build()).Commit(ctx)
	})
	now := w.load()
	if err := rewrite.check(ctx, now); !conflictIn(err, "pos.parquet") {
		t.Fatalf("concurrent deletes against the rewritten file: %v", err)
	}
	if err := appends.check(ctx, now); !conflictIn(err, "changed the table") {
		t.Fatalf("appends only, after a row delta: %v", err)
	}
}

// fileEval's rules, file by file: bounds, null counts, IN, ranges,
// prefixes, and the identity partition value standing in for missing
// bounds.
func TestFilterMayMatch(t *testing.T) {
	cat, ident, _ := newTable(t)
	meta := writer{t, cat, ident}.load().Metadata()
	f := longFile(t, "f", 10, 20, 4)
	id := iceberg.Reference("id")
	for _, c := range []struct {
		expr iceberg.BooleanExpression
		want bool
	}{
		{iceberg.EqualTo(id, int64(15)), true},
		{iceberg.EqualTo(id, int64(21)), false},
		{iceberg.EqualTo(id, int64(9)), false},
		{iceberg.IsIn(id, int64(1), int64(2), int64(30)), false},
		{iceberg.IsIn(id, int64(1), int64(20)), true},
		{iceberg.LessThan(id, int64(10)), false},
		{iceberg.LessThanEqual(id, int64(10)), true},
		{iceberg.GreaterThan(id, int64(20)), false},
		{iceberg.GreaterThanEqual(id, int64(20)), true},
		{iceberg.IsNull(id), false},
		{iceberg.NotNull(id), true},
		{iceberg.NewNot(iceberg.GreaterThan(id, int64(5))), false}, // id <= 5
		{iceberg.NewOr(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(id, int64(12))), true},
		{iceberg.NewAnd(iceberg.GreaterThan(id, int64(12)), iceberg.LessThan(id, int64(11))), true}, // each may hold
		{iceberg.NewAnd(iceberg.GreaterThan(id, int64(12)), iceberg.GreaterThan(id, int64(20))), false},
		{iceberg.NotEqualTo(id, int64(15)), true},
		{nil, true},
	} {
		if got := bindFilter(c.expr, meta).mayMatch(f); got != c.want {
			t.Errorf("%v on [10, 20]: got %v, want %v", c.expr, got, c.want)
		}
	}
	// No bounds: anything may match.
	b, _ := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file:///w/x.parquet", iceberg.ParquetFile, nil, nil, nil, 3, 10)
	if !bindFilter(iceberg.EqualTo(id, int64(1)), meta).mayMatch(b.Build()) {
		t.Error("a file without metrics was ruled out")
	}
	// A filter on a column the table does not have binds to nothing and
	// matches every file.
	if !bindFilter(iceberg.EqualTo(iceberg.Reference("gone"), int64(1)), meta).mayMatch(f) {
		t.Error("an unbindable filter ruled a file out")
	}
}

// Strings: bounds and prefixes, with truncated bounds as writers make
// them; identity partition values stand in for missing bounds.
func TestFilterStringsAndPartitions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat := openLocal(t, dir)
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"default", "s"}, schema, icecat.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	meta := tbl.Metadata()
	b, err := iceberg.NewDataFileBuilder(meta.PartitionSpec(), iceberg.EntryContentData, "file:///w/eu.parquet", iceberg.ParquetFile,
		map[int]any{1000: "eu"}, nil, nil, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	f := b.LowerBoundValues(map[int][]byte{2: []byte("apple")}).UpperBoundValues(map[int][]byte{2: []byte("banana")}).Build()
	for _, c := range []struct {
		expr iceberg.BooleanExpression
		want bool
	}{
		{iceberg.EqualTo(iceberg.Reference("region"), "eu"), true},
		{iceberg.EqualTo(iceberg.Reference("region"), "us"), false},
		{iceberg.StartsWith(iceberg.Reference("name"), "b"), true},
		{iceberg.StartsWith(iceberg.Reference("name"), "c"), false},
		{iceberg.StartsWith(iceberg.Reference("name"), "ap"), true},
		{iceberg.StartsWith(iceberg.Reference("name"), "a0"), false},
		{iceberg.EqualTo(iceberg.Reference("name"), "cherry"), false},
		{iceberg.EqualTo(iceberg.Reference("name"), "avocado"), true},
	} {
		if got := bindFilter(c.expr, meta).mayMatch(f); got != c.want {
			t.Errorf("%v: got %v, want %v", c.expr, got, c.want)
		}
	}
}

// Run with a scope: a copy-on-write change built on a stale table
// commits past concurrent appends of other rows (built again on the
// fresh table: their files survive), and fails with ErrConflict, nothing
// committed, past an append of a row its filter matches.
func TestRunScopedReplace(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	f1, f2 := longFile(t, "f1", 1, 1, 1), longFile(t, "f2", 2, 2, 1)
	stale := w.add(f1, f2)
	w.add(longFile(t, "f3", 3, 3, 1))
	var stats Stats
	replace := func(from *table.Table, newName string) error {
		return Run(ctx, Request{Name: "t", Ident: ident, Table: from, Catalog: cat, Stats: &stats,
			Scope: &Scope{Op: OpDelete, Base: from.CurrentSnapshot().SnapshotID, Filter: iceberg.EqualTo(iceberg.Reference("id"), int64(1)), Rewritten: []iceberg.DataFile{f1}},
			Tx: func(tx *table.Transaction, _ table.Metadata) error {
				return tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{f1}, []iceberg.DataFile{longFile(t, newName, 1, 1, 1)}, nil)
			}})
	}
	if err := replace(stale, "f1b"); err != nil {
		t.Fatal(err)
	}
	if got, want := livePaths(t, w.load()), "f1b f2 f3"; got != want {
		t.Fatalf("live files %q, want %q", got, want)
	}
	if stats.Attempts.Load() != 1 || stats.Conflicts.Load() != 0 {
		t.Errorf("attempts %d, conflicts %d; want 1 and 0 (built on the fresh table, in its turn)", stats.Attempts.Load(), stats.Conflicts.Load())
	}

	// A second statement read the table before f1b's row 1 was added:
	// its rewrite of f1 now conflicts (f1 is gone).
	stale = w.load()
	w.add(longFile(t, "f4", 1, 1, 1))
	err := Run(ctx, Request{Name: "t", Ident: ident, Table: stale, Catalog: cat, Stats: &stats,
		Scope: &Scope{Op: OpDelete, Base: stale.CurrentSnapshot().SnapshotID, Filter: iceberg.EqualTo(iceberg.Reference("id"), int64(1))},
		Tx: func(tx *table.Transaction, _ table.Metadata) error {
			return tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{longFile(t, "f1b", 1, 1, 1)}, nil, nil)
		}})
	if !conflictIn(err, "f4.parquet") || !strings.Contains(err.Error(), "nothing was committed") {
		t.Fatalf("delete past an append of a matching row: %v", err)
	}
	if got, want := livePaths(t, w.load()), "f1b f2 f3 f4"; got != want {
		t.Fatalf("live files after the conflict %q, want %q", got, want)
	}
}

// Commits of one process to one table take turns: none loses a race to
// another, so each is sent once.
func TestRunQueueSerializesCommits(t *testing.T) {
	ctx := context.Background()
	cat, ident, tbl := newTable(t)
	var stats Stats
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(ctx, Request{Name: "t", Ident: ident, Table: tbl, Catalog: cat, Stats: &stats, Append: true,
				Tx: func(tx *table.Transaction, _ table.Metadata) error {
					return tx.AddDataFiles(ctx, []iceberg.DataFile{longFile(t, fmt.Sprintf("q%d", i), int64(i), int64(i), 1)}, nil, table.WithoutDuplicateCheck())
				}})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(strings.Fields(livePaths(t, writer{t, cat, ident}.load()))); got != n {
		t.Fatalf("%d live files, want %d", got, n)
	}
	if stats.Attempts.Load() != n || stats.Conflicts.Load() != 0 || stats.Retries.Load() != 0 {
		t.Errorf("attempts %d conflicts %d retries %d; want %d, 0, 0", stats.Attempts.Load(), stats.Conflicts.Load(), stats.Retries.Load(), n)
	}
	if q := queues.queued(); q != 0 {
		t.Errorf("%d tables left in the commit queue", q)
	}
}

// livePaths names the live data files of tbl's current snapshot, sorted.
func livePaths(t *testing.T, tbl *table.Table) string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range tasks {
		p := task.File.FilePath()
		names = append(names, strings.TrimSuffix(p[strings.LastIndexByte(p, '/')+1:], ".parquet"))
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// An attempt that commits nothing leaves nothing behind: its manifest
// list and manifests are deleted (and its metadata file), and with
// OwnFiles the files its change wrote; without, the statement's files
// stay for the next attempt (or for the statement to delete).
func TestRunLostAttemptLeavesNoFiles(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	stale := w.add(longFile(t, "f1", 1, 1, 1))
	w.add(longFile(t, "f2", 2, 2, 1))
	dir := strings.TrimPrefix(stale.Location(), "file://") + "/metadata"
	list := func() map[string]bool {
		out := map[string]bool{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out[e.Name()] = true
		}
		return out
	}
	before := list()
	err := Run(ctx, Request{Name: "t", Ident: ident, Table: stale, Catalog: cat, Pinned: true,
		Tx: func(tx *table.Transaction, _ table.Metadata) error {
			return tx.AddDataFiles(ctx, []iceberg.DataFile{longFile(t, "f3", 3, 3, 1)}, nil, table.WithoutDuplicateCheck())
		}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a pinned change past a concurrent commit: %v, want ErrConflict", err)
	}
	for name := range list() {
		if !before[name] {
			t.Errorf("the lost attempt left metadata/%s", name)
		}
	}
}

// A race lost to another writer (one that commits between this attempt's
// load and its compare-and-swap, as another coordinator would) is built
// again on the refreshed table, after checking the scope against what
// that writer committed: a commit of other rows is survived, one of a
// row the filter matches is a conflict.
func TestRunRetriesARaceLostToAnotherWriter(t *testing.T) {
	ctx := context.Background()
	cat, ident, _ := newTable(t)
	w := writer{t, cat, ident}
	w.add(longFile(t, "f1", 1, 1, 1), longFile(t, "f2", 2, 2, 1))
	for _, c := range []struct {
		name     string
		other    iceberg.DataFile
		conflict bool
	}{{"other rows", longFile(t, "g3", 3, 3, 1), false}, {"a matching row", longFile(t, "g1", 1, 1, 1), true}} {
		t.Run(c.name, func(t *testing.T) {
			read := w.load()
			var stats Stats
			builds := 0
			err := Run(ctx, Request{Name: "t", Ident: ident, Table: read, Catalog: cat, Stats: &stats,
				Scope: &Scope{Op: OpUpdate, Base: read.CurrentSnapshot().SnapshotID, Filter: iceberg.EqualTo(iceberg.Reference("id"), int64(1))},
				Tx: func(tx *table.Transaction, _ table.Metadata) error {
					if builds++; builds == 1 {
						w.add(c.other) // lands between the load and the send
					}
					return tx.AddDataFiles(ctx, []iceberg.DataFile{longFile(t, "u"+c.name[:1], 1, 1, 1)}, nil, table.WithoutDuplicateCheck())
				}})
			if c.conflict {
				if !conflictIn(err, "g1.parquet") || builds != 1 {
					t.Fatalf("after a matching row: %v (built %d times), want a conflict naming g1", err, builds)
				}
				return
			}
			if err != nil || builds != 2 {
				t.Fatalf("after other rows: %v, built %d times; want committed on the second build", err, builds)
			}
			if stats.Attempts.Load() != 2 || stats.Conflicts.Load() != 1 || stats.Retries.Load() != 1 {
				t.Errorf("attempts %d conflicts %d retries %d; want 2, 1, 1", stats.Attempts.Load(), stats.Conflicts.Load(), stats.Retries.Load())
			}
		})
	}
}
