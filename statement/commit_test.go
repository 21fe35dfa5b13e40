package statement

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/partstats"
	"github.com/icefloe/icefloe/internal/testlocal"
	"github.com/icefloe/icefloe/planner"
)

// faultyCatalog fails commits on demand: with a transport-like error whose
// outcome nobody knows, or with a lost race.
type faultyCatalog struct {
	icecat.Catalog
	mode    atomic.Int32 // 0 pass, 1 unknown outcome, 2 conflict
	commits atomic.Int32 // commits passed on to the catalog
}

var errConnReset = errors.New("read tcp 10.0.0.1:443: connection reset by peer")

func (f *faultyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	f.commits.Add(1)
	switch f.mode.Load() {
	case 1:
		return nil, "", errConnReset
	case 2:
		return nil, "", table.ErrCommitFailed
	case 3:
		if _, _, err := f.Catalog.CommitTable(ctx, ident, reqs, ups); err != nil {
			return nil, "", err
		}
		return nil, "", errConnReset
	}
	return f.Catalog.CommitTable(ctx, ident, reqs, ups)
}

// newFaultyEnv is an executor on a local catalog behind a faultyCatalog;
// dir holds the warehouse.
func newFaultyEnv(t *testing.T) (*Executor, *catalog.Mounts, *faultyCatalog, string) {
	t.Helper()
	ctx := context.Background()
	l := testlocal.New(t)
	dir := t.TempDir()
	cat, props, err := catalog.OpenLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	faulty := &faultyCatalog{Catalog: cat}
	m := catalog.NewMounts()
	if err := m.Mount("local", faulty, props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	pl, err := planner.New(planner.Options{Mounts: m, Engine: l.Eng, Key: l.Key, Workers: oneWorker{}, Flight: l.Pool})
	if err != nil {
		t.Fatal(err)
	}
	return New(pl), m, faulty, dir
}

func parquetFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCommitOutcome: a commit whose outcome is unknown keeps the statement's
// files and says so; a lost race deletes them and says what conflicted.
// Either way the table is unchanged.
func TestCommitOutcome(t *testing.T) {
	ctx := context.Background()
	p, m, faulty, dir := newFaultyEnv(t)
	s := planner.Session{Catalog: "local", Schema: "default"}
	if _, err := run(ctx, p, s, "CREATE TABLE c (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, p, s, "INSERT INTO c VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	warehouse := filepath.Join(dir, "warehouse")
	snapshots := func() int {
		pin, err := m.LoadTable(ctx, catalog.TableRef{Catalog: "local", Schema: "default", Table: "c"})
		if err != nil {
			t.Fatal(err)
		}
		return len(pin.Table.Metadata().Snapshots())
	}
	before, snapsBefore := parquetFiles(t, warehouse), snapshots()

	faulty.mode.Store(1)
	_, err := run(ctx, p, s, "INSERT INTO c VALUES (2)")
	if !errors.Is(err, planner.ErrCommitUnknown) || !strings.Contains(err.Error(), "may or may not") {
		t.Fatalf("unknown outcome: got %v, want planner.ErrCommitUnknown saying the outcome is unknown", err)
	}
	if got := parquetFiles(t, warehouse); got != before+1 {
		t.Fatalf("unknown outcome must keep the statement's file: %d files, want %d", got, before+1)
	}
	faulty.mode.Store(0)
	if snapshots() != snapsBefore {
		t.Fatal("the failed commit changed the table")
	}
	kept := parquetFiles(t, warehouse)

	faulty.mode.Store(2)
	_, err = run(ctx, p, s, "INSERT INTO c VALUES (3)")
	if !errors.Is(err, planner.ErrConflict) {
		t.Fatalf("lost race: got %v, want planner.ErrConflict", err)
	}
	faulty.mode.Store(0)
	if got := parquetFiles(t, warehouse); got != kept {
		t.Fatalf("a lost commit must delete its files: %d files, want %d", got, kept)
	}
	if snapshots() != snapsBefore {
		t.Fatal("the conflicting commit changed the table")
	}
}

// TestStatementID: every commit records its statement's id in the
// snapshot summary; a statement run again under a client's id commits
// nothing and deletes its files; a commit whose answer was lost but which
// landed counts as committed.
func TestStatementID(t *testing.T) {
	ctx := context.Background()
	p, m, faulty, dir := newFaultyEnv(t)
	s := planner.Session{Catalog: "local", Schema: "default"}
	if _, err := run(ctx, p, s, "CREATE TABLE c (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	ref := catalog.TableRef{Catalog: "local", Schema: "default", Table: "c"}
	ids := func() []string {
		pin, err := m.LoadTable(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, snap := range pin.Table.Metadata().Snapshots() {
			out = append(out, snap.Summary.Properties[commit.StatementIDProp])
		}
		return out
	}
	if _, err := run(ctx, p, s, "INSERT INTO c VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 1 || len(got[0]) != 36 {
		t.Fatalf("statement ids of the snapshots: %q, want one UUID", got)
	}
	sctx, err := commit.WithStatementID(ctx, "load-2026-12-01:part.7", "")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := run(sctx, p, s, "INSERT INTO c VALUES (10), (11), (12)"); err != nil || n != 3 {
		t.Fatalf("first run: %d, %v", n, err)
	}
	warehouse := filepath.Join(dir, "warehouse")
	files := parquetFiles(t, warehouse)
	for _, q := range []string{"INSERT INTO c VALUES (10), (11), (12)", "INSERT INTO c VALUES (99)"} {
		again, err := commit.WithStatementID(ctx, "load-2026-12-01:part.7", "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(again, p, s, q)
		if !errors.Is(err, commit.ErrAlreadyCommitted) || !strings.Contains(err.Error(), "load-2026-12-01:part.7") {
			t.Fatalf("run again under the same id: %v, want ErrAlreadyCommitted naming the id", err)
		}
	}
	if got := parquetFiles(t, warehouse); got != files {
		t.Fatalf("the refused runs left files: %d, want %d", got, files)
	}
	if got := ids(); len(got) != 2 || got[1] != "load-2026-12-01:part.7" {
		t.Fatalf("statement ids of the snapshots: %q", got)
	}
	// The same id sent by another principal is another statement; its
	// own retry commits nothing again.
	for try := range 2 {
		bob, err := commit.WithStatementID(ctx, "load-2026-12-01:part.7", "bob")
		if err != nil {
			t.Fatal(err)
		}
		n, err := run(bob, p, s, "INSERT INTO c VALUES (20)")
		if try == 0 && (err != nil || n != 1) {
			t.Fatalf("another principal under the same id: %d, %v; want 1 row", n, err)
		}
		if try == 1 && !errors.Is(err, commit.ErrAlreadyCommitted) {
			t.Fatalf("that principal's retry: %v, want ErrAlreadyCommitted", err)
		}
	}
	for _, bad := range []string{"", "a b", "x;DROP", strings.Repeat("x", commit.MaxStatementIDLen+1)} {
		if _, err := commit.WithStatementID(ctx, bad, ""); !errors.Is(err, commit.ErrStatementID) {
			t.Errorf("statement id %q: %v, want ErrStatementID", bad, err)
		}
	}
	// The catalog applies the commit and the answer is lost.
	faulty.mode.Store(3)
	n, err := run(ctx, p, s, "INSERT INTO c VALUES (5)")
	faulty.mode.Store(0)
	if err != nil || n != 1 {
		t.Fatalf("a commit that landed but whose answer was lost: %d, %v; want 1 row, no error", n, err)
	}
	if got := ids(); len(got) != 4 {
		t.Fatalf("%d snapshots after the lost answer, want 4", len(got))
	}
}

// TestOneCommitWithStatistics: on a table that asks for partition
// statistics, one INSERT makes one snapshot in one commit to the
// catalog, and that commit registers the snapshot's statistics file,
// whose counts are the table's; a commit that loses its race leaves no
// statistics file behind.
func TestOneCommitWithStatistics(t *testing.T) {
	ctx := context.Background()
	p, m, faulty, dir := newFaultyEnv(t)
	s := planner.Session{Catalog: "local", Schema: "default"}
	if _, err := run(ctx, p, s, "CREATE TABLE ps (id BIGINT, p BIGINT) PARTITIONED BY (p) WITH ('icefloe.partition-stats.enabled' = 'true')"); err != nil {
		t.Fatal(err)
	}
	ref := catalog.TableRef{Catalog: "local", Schema: "default", Table: "ps"}
	load := func() *table.Table {
		pin, err := m.LoadTable(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return pin.Table
	}
	statsFiles := func() int {
		n := 0
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.Contains(filepath.Base(p), "partition-stats-") {
				n++
			}
			return nil
		})
		return n
	}
	for i, q := range []string{"INSERT INTO ps VALUES (1, 1), (2, 1), (3, 2)", "INSERT INTO ps VALUES (4, 2), (5, 3)"} {
		before := load()
		commits := faulty.commits.Load()
		if _, err := run(ctx, p, s, q); err != nil {
			t.Fatal(err)
		}
		if got := faulty.commits.Load() - commits; got != 1 {
			t.Fatalf("%s: %d commits to the catalog, want 1", q, got)
		}
		after := load()
		if got, want := len(after.Metadata().Snapshots()), len(before.Metadata().Snapshots())+1; got != want {
			t.Fatalf("%s: %d snapshots, want %d", q, got, want)
		}
		if got, want := len(slices.Collect(after.Metadata().PreviousFiles())), len(slices.Collect(before.Metadata().PreviousFiles()))+1; got != want {
			t.Fatalf("%s: %d metadata files in the log, want %d (one commit)", q, got, want)
		}
		head := after.CurrentSnapshot().SnapshotID
		var found *table.PartitionStatisticsFile
		for f := range after.Metadata().PartitionStatistics() {
			if f.SnapshotID == head {
				found = &f
			}
		}
		if found == nil {
			t.Fatalf("%s: no partition statistics for the new snapshot %d", q, head)
		}
		rows, err := partstats.Read(ctx, after, *found)
		if err != nil {
			t.Fatal(err)
		}
		var records int64
		for _, r := range rows {
			records += r.DataRecords
		}
		if want := int64([]int{3, 5}[i]); records != want || len(rows) != []int{2, 3}[i] {
			t.Fatalf("%s: statistics count %d records in %d partitions, want %d in %d", q, records, len(rows), want, []int{2, 3}[i])
		}
	}
	files := statsFiles()
	faulty.mode.Store(2)
	if _, err := run(ctx, p, s, "INSERT INTO ps VALUES (6, 1)"); !errors.Is(err, planner.ErrConflict) {
		t.Fatalf("lost race: %v, want ErrConflict", err)
	}
	faulty.mode.Store(0)
	if got := statsFiles(); got != files {
		t.Fatalf("a lost commit left %d statistics files, want %d", got, files)
	}
}
