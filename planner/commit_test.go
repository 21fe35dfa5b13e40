package planner

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// faultyCatalog fails commits on demand: with a transport-like error whose
// outcome nobody knows, or with a lost race.
type faultyCatalog struct {
	icecat.Catalog
	mode atomic.Int32 // 0 pass, 1 unknown outcome, 2 conflict
}

var errConnReset = errors.New("read tcp 10.0.0.1:443: connection reset by peer")

func (f *faultyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	switch f.mode.Load() {
	case 1:
		return nil, "", errConnReset
	case 2:
		return nil, "", table.ErrCommitFailed
	}
	return f.Catalog.CommitTable(ctx, ident, reqs, ups)
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
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "256MB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	key, _ := wire.RandomKey()
	p, err := New(Options{Mounts: m, Engine: eng, Key: key, Workers: twoWorkers, Flight: testPool(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := Session{Catalog: "local", Schema: "default"}
	if _, err := p.Exec(ctx, s, "CREATE TABLE c (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, s, "INSERT INTO c VALUES (1)"); err != nil {
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
	_, err = p.Exec(ctx, s, "INSERT INTO c VALUES (2)")
	if !errors.Is(err, ErrCommitUnknown) || !strings.Contains(err.Error(), "may or may not") {
		t.Fatalf("unknown outcome: got %v, want ErrCommitUnknown saying the outcome is unknown", err)
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
	_, err = p.Exec(ctx, s, "INSERT INTO c VALUES (3)")
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("lost race: got %v, want ErrConflict", err)
	}
	faulty.mode.Store(0)
	if got := parquetFiles(t, warehouse); got != kept {
		t.Fatalf("a lost commit must delete its files: %d files, want %d", got, kept)
	}
	if snapshots() != snapsBefore {
		t.Fatal("the conflicting commit changed the table")
	}
}
