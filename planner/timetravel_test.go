package planner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/wire"
)

// ticketScans opens every endpoint's ticket and returns the scans of view
// table name.
func ticketScans(t *testing.T, key *wire.Key, plan *Plan, table string) []wire.Scan {
	t.Helper()
	var out []wire.Scan
	var visit func(sealed []byte)
	visit = func(sealed []byte) {
		tk, err := key.Open(sealed, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range tk.Scans {
			if sc.Table == table {
				out = append(out, sc)
			}
		}
		for _, c := range tk.Children {
			visit(c.Ticket)
		}
	}
	for _, ep := range plan.Endpoints {
		visit(ep.Ticket)
	}
	return out
}

func TestTimeTravelPinsSnapshot(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 3)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	pinned, err := p.opts.Mounts.LoadTable(ctx, refOf("local", "default", "t"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, snap := range pinned.Table.Metadata().Snapshots() {
		ids = append(ids, snap.SnapshotID)
	}
	if len(ids) != 3 {
		t.Fatalf("%d snapshots", len(ids))
	}
	first := pinned.Table.SnapshotByID(ids[0])
	cases := []struct {
		q     string
		snap  int64
		files int
	}{
		{fmt.Sprintf("SELECT * FROM t AT (VERSION => %d)", ids[0]), ids[0], 1},
		{fmt.Sprintf("SELECT count(*) FROM t AT (VERSION => %d)", ids[1]), ids[1], 2},
		{"SELECT * FROM t AT (VERSION => 'main')", ids[2], 3},
		{fmt.Sprintf("SELECT * FROM t AT (TIMESTAMP => TIMESTAMP '%s')", time.UnixMilli(first.TimestampMs).UTC().Format("2006-01-02 15:04:05.000")), ids[0], 1},
		{"SELECT * FROM t", 0, 3},
	}
	for _, c := range cases {
		plan, err := planText(ctx, p, s, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		scans := ticketScans(t, key, plan, "local.default.t")
		files := 0
		for _, sc := range scans {
			if sc.SnapshotID != c.snap {
				t.Errorf("%s: scan snapshot %d, want %d", c.q, sc.SnapshotID, c.snap)
			}
			files += len(sc.Tasks)
		}
		if files != c.files {
			t.Errorf("%s: %d tasks, want %d", c.q, files, c.files)
		}
	}
	// Two versions of one table are two inputs.
	plan, err := planText(ctx, p, s, fmt.Sprintf("SELECT (SELECT count(*) FROM t) - (SELECT count(*) FROM t AT (VERSION => %d))", ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ticketScans(t, key, plan, "local.default.t")); n < 2 {
		t.Errorf("two versions planned as %d scans", n)
	}
}

func TestTimeTravelErrors(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	for q, want := range map[string]error{
		"SELECT * FROM t AT (VERSION => 42)":                       ErrNotFound,
		"SELECT * FROM t AT (VERSION => 'nobranch')":               ErrNotFound,
		"SELECT * FROM t AT (TIMESTAMP => TIMESTAMP '1990-01-01')": ErrNotFound,
		"SELECT * FROM t AT (TIMESTAMP => 'yesterday')":            ErrInvalid,
		"SELECT * FROM t AT (VERSION => (SELECT 1))":               ErrUnsupported,
		`SELECT * FROM "t$snapshots" AT (VERSION => 'main')`:       ErrUnsupported,
		`SELECT * FROM "nope$snapshots"`:                           ErrNotFound,
	} {
		if _, err := planText(ctx, p, s, q); !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", q, err, want)
		}
	}
}

func TestMetadataTablePlanned(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 2)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	for _, kind := range []string{"snapshots", "history", "files", "manifests", "partitions", "refs"} {
		q := fmt.Sprintf(`SELECT count(*) FROM "t$%s"`, kind)
		plan, err := planText(ctx, p, s, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		scans := ticketScans(t, key, plan, "local.default.t$"+kind)
		if len(scans) != 1 || scans[0].MetadataTable != kind || len(scans[0].Tasks) != 0 {
			t.Fatalf("%s: scans %v", q, scans)
		}
	}
	// Columns of the metadata table bind, with SQL on top.
	if _, err := planText(ctx, p, s, `SELECT snapshot_id, committed_at FROM "t$snapshots" WHERE operation = 'append' ORDER BY 2`); err != nil {
		t.Fatal(err)
	}
}

func refOf(cat, schema, table string) catalog.TableRef {
	return catalog.TableRef{Catalog: cat, Schema: schema, Table: table}
}
