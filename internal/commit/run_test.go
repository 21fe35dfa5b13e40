package commit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// openLocal opens the local SQL catalog of a warehouse in dir.
func openLocal(t *testing.T, dir string) icecat.Catalog {
	t.Helper()
	cat, _, err := catalog.OpenLocal(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(icecat.Closer).Close() })
	return cat
}

func newTable(t *testing.T) (icecat.Catalog, table.Identifier, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cat := openLocal(t, t.TempDir())
	ident := table.Identifier{catalog.DefaultSchema, "t"}
	tbl, err := cat.CreateTable(ctx, ident, iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}))
	if err != nil {
		t.Fatal(err)
	}
	return cat, ident, tbl
}

// A Meta change whose requirement fails lost a race: it is computed again
// from the reloaded table (which holds another writer's commit), and each
// attempt is counted.
func TestRunMetaRetriesALostRace(t *testing.T) {
	ctx := context.Background()
	cat, ident, stale := newTable(t)
	if _, _, err := cat.CommitTable(ctx, ident, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"other": "1"})}); err != nil {
		t.Fatal(err)
	}
	var stats Stats
	computed := 0
	err := Run(ctx, Request{
		Name: "t", Ident: ident, Table: stale, Catalog: cat, Stats: &stats,
		Meta: func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
			computed++
			var reqs []table.Requirement
			if computed == 1 {
				// main has no snapshot: this requirement fails.
				reqs = append(reqs, table.AssertRefSnapshotID("main", ptr(int64(1))))
			}
			props := iceberg.Properties{"seen": tbl.Properties().Get("other", "none")}
			return reqs, []table.Update{table.NewSetPropertiesUpdate(props)}, nil
		},
		Reload: func(ctx context.Context) (*table.Table, error) { return cat.LoadTable(ctx, ident) },
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if computed != 2 || got.Properties()["seen"] != "1" {
		t.Errorf("computed %d times, seen=%q; want 2 and the other writer's property", computed, got.Properties()["seen"])
	}
	if stats.Attempts.Load() != 2 || stats.Conflicts.Load() != 1 {
		t.Errorf("attempts %d conflicts %d, want 2 and 1", stats.Attempts.Load(), stats.Conflicts.Load())
	}
}

func ptr[T any](v T) *T { return &v }

// A Tx commits once, runs After with the table as committed, and a
// statement cancelled before its commit commits nothing.
func TestRunTx(t *testing.T) {
	cat, ident, tbl := newTable(t)
	var stats Stats
	r := Request{Name: "local.main.t", Ident: ident, Table: tbl, Catalog: cat, Stats: &stats,
		Tx: func(tx *table.Transaction, _ table.Metadata) error {
			return tx.SetProperties(iceberg.Properties{"k": "v"})
		}}
	var after *table.Table
	r.After = func(_ context.Context, _ table.Metadata, committed *table.Table) { after = committed }

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(cancelled, r); err == nil || !strings.Contains(err.Error(), "commit to local.main.t: nothing was committed") || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the commit: %v", err)
	}
	if after != nil || stats.Attempts.Load() != 0 {
		t.Fatal("a cancelled statement committed")
	}
	if err := Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if after == nil || after.Properties()["k"] != "v" || stats.Attempts.Load() != 1 {
		t.Errorf("after %v, attempts %d", after, stats.Attempts.Load())
	}
}
