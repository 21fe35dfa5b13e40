package catalog

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

func demoTotalRecords(t *testing.T, tbl *table.Table) int64 {
	t.Helper()
	s := tbl.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		t.Fatalf("%s has no snapshot", tbl.Identifier())
	}
	n, err := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSeedDemo(t *testing.T) {
	ctx := context.Background()
	cat, _, err := OpenLocal(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(icecat.Closer).Close()
	if err := SeedDemo(ctx, cat, "demo"); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		rows    int64
		minFile int
		snaps   int
		spec    string
	}{
		"orders":    {DemoOrders, 8, 5, "ordered_at_day"},
		"customers": {DemoCustomers, 10, 1, "country"},
		"events":    {DemoEvents, 8, 2, "id_bucket"},
	}
	snapshots := map[string]int64{}
	for name, w := range want {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", name})
		if err != nil {
			t.Fatal(err)
		}
		if got := demoTotalRecords(t, tbl); got != w.rows {
			t.Errorf("%s: %d rows, want %d", name, got, w.rows)
		}
		if got := len(tbl.Metadata().Snapshots()); got != w.snaps {
			t.Errorf("%s: %d snapshots, want %d", name, got, w.snaps)
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d data files", name, len(tasks))
		if len(tasks) < w.minFile {
			t.Errorf("%s: %d data files, want at least %d", name, len(tasks), w.minFile)
		}
		spec := tbl.Spec()
		if spec.NumFields() != 1 || spec.Field(0).Name != w.spec {
			t.Errorf("%s: spec %s", name, &spec)
		}
		snapshots[name] = tbl.CurrentSnapshot().SnapshotID
	}

	// The rows are what the generator promises: NULLs where allowed, none
	// where the column is required, ids 1…n.
	orders, err := cat.LoadTable(ctx, table.Identifier{"demo", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := orders.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != DemoOrders {
		t.Fatalf("scanned %d orders", at.NumRows())
	}
	nulls := map[string]int{}
	var idSum int64
	for i := 0; i < int(at.NumCols()); i++ {
		col := at.Column(i)
		nulls[col.Name()] = col.NullN()
		if col.Name() == "id" {
			for _, c := range col.Data().Chunks() {
				for _, v := range c.(*array.Int64).Int64Values() {
					idSum += v
				}
			}
		}
	}
	if nulls["id"] != 0 || nulls["ordered_at"] != 0 || nulls["status"] == 0 || nulls["amount"] == 0 {
		t.Errorf("orders nulls: %v", nulls)
	}
	if idSum != DemoOrders*(DemoOrders+1)/2 {
		t.Errorf("orders ids sum to %d", idSum)
	}

	// A second run adds nothing.
	if err := SeedDemo(ctx, cat, "demo"); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", name})
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.CurrentSnapshot().SnapshotID; got != snapshots[name] {
			t.Errorf("%s: second run made snapshot %d", name, got)
		}
		if got := demoTotalRecords(t, tbl); got != w.rows {
			t.Errorf("%s: %d rows after a second run, want %d", name, got, w.rows)
		}
	}
}

// TestSeedDemoDeterministic seeds two catalogs and compares the data row
// by row (file order may differ: partitions are written in parallel).
func TestSeedDemoDeterministic(t *testing.T) {
	ctx := context.Background()
	var rows [2]map[int64]string
	for i := range rows {
		cat, _, err := OpenLocal(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := SeedDemo(ctx, cat, "d"); err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, table.Identifier{"d", "events"})
		if err != nil {
			t.Fatal(err)
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := array.NewTableReader(at, 0)
		rows[i] = map[int64]string{}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			for r := 0; r < int(rec.NumRows()); r++ {
				var s string
				for c := 1; c < int(rec.NumCols()); c++ {
					s += rec.Column(c).ValueStr(r) + "|"
				}
				rows[i][ids.Value(r)] = s
			}
		}
		rdr.Release()
		at.Release()
		cat.(icecat.Closer).Close()
	}
	if len(rows[0]) != DemoEvents || len(rows[1]) != DemoEvents {
		t.Fatalf("%d and %d distinct ids, want %d", len(rows[0]), len(rows[1]), DemoEvents)
	}
	for id, r := range rows[0] {
		if rows[1][id] != r {
			t.Fatalf("event %d differs between runs: %q vs %q", id, r, rows[1][id])
		}
	}
}
