package integration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/parse"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// TestShuffleJoin joins two tables of 300k rows on two workers through a
// coordinator that shuffles them and one that gathers them: the answers
// agree, EXPLAIN ANALYZE shows the partitioned fragments served by both
// workers and each hash exchange's rows, and each worker's DuckDB memory
// (sampled) is logged for both.
func TestShuffleJoin(t *testing.T) {
	ctx := context.Background()
	s, gc, shuffled, gathered := startShuffleClusters(t, 1, true)
	execUpdate(t, shuffled, `CREATE TABLE big_a AS SELECT range AS k, range % 1000 AS g, repeat('a', 40) || range AS pad FROM range(300000)`)
	execUpdate(t, shuffled, `CREATE TABLE big_b AS SELECT CAST(range * 2 AS INTEGER) AS k, range % 7 AS v, repeat('b', 40) || range AS pad FROM range(300000)`)

	q := `SELECT a.g, count(*) AS n, sum(b.v) AS v, max(length(a.pad || b.pad)) AS w FROM big_a a JOIN big_b b ON a.k = b.k GROUP BY a.g`
	for _, c := range []struct {
		coord *cluster.Coordinator
		want  planner.Strategy
	}{{s.Coordinator, planner.Shuffle}, {gc, planner.Gather}} {
		plan, err := c.coord.Planner.Plan(ctx, diffSession, parse.Must(q))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Strategy != c.want {
			t.Fatalf("planned as %s, want %s:\n%s", plan.Strategy, c.want, plan.Explain)
		}
	}
	peaks := func(cnxn adbc.Connection, sql string) (result, []int64) {
		peak := make([]int64, len(s.Workers))
		done := make(chan struct{})
		var wg sync.WaitGroup
		for i, w := range s.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if m, _, err := w.DuckDBMemory(ctx); err == nil {
						peak[i] = max(peak[i], m)
					}
					select {
					case <-done:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
		}
		res := mustQuery(t, cnxn, sql)
		close(done)
		wg.Wait()
		return res, peak
	}
	for _, sql := range []string{q, `SELECT a.k, b.v, a.pad FROM big_a a LEFT JOIN big_b b ON a.k = b.k WHERE a.g < 50`} {
		sres, speak := peaks(shuffled, sql)
		gres, gpeak := peaks(gathered, sql)
		slices.Sort(sres.rows)
		slices.Sort(gres.rows)
		if !slices.Equal(sres.rows, gres.rows) || len(sres.rows) == 0 {
			t.Fatalf("%s: shuffled %d rows, gathered %d, or they differ", sql, len(sres.rows), len(gres.rows))
		}
		t.Logf("%s: %d rows; DuckDB memory peak per worker (sampled): shuffled %v, gathered %v", sql, len(sres.rows), speak, gpeak)
	}
	// Join matches: a.k in [0, 300000) meets b.k = 2i for i < 150000.
	if got := mustQuery(t, shuffled, `SELECT count(*) FROM big_a a JOIN big_b b ON a.k = b.k`).rows; len(got) != 1 || got[0] != "150000" {
		t.Fatalf("join count %v, want 150000", got)
	}
	res := mustQuery(t, shuffled, "EXPLAIN ANALYZE "+q)
	served := map[string]bool{}
	for _, r := range res.rows {
		if strings.Contains(r, "child") && strings.Contains(r, "__icefloe_partials") {
			_, loc, _ := strings.Cut(r, "served by ")
			served[strings.Fields(loc)[0]] = true
		}
	}
	if len(served) != 2 {
		t.Fatalf("partitioned fragments served by %v, want both workers:\n%s", served, strings.Join(res.rows, "\n"))
	}
	// Each hash exchange moved its table's rows once, in one stream per
	// partition of its one producer.
	exchanges := 0
	for _, r := range res.rows {
		if strings.Contains(r, "Exchange hash") && strings.Contains(r, "into 2 partitions from 1 producer, streamed") &&
			strings.Contains(r, "actual 300000 rows") && strings.Contains(r, "in 2 streams") {
			exchanges++
		}
	}
	if exchanges != 2 {
		t.Fatalf("want both hash exchanges measured, 300000 rows in 2 streams each:\n%s", strings.Join(res.rows, "\n"))
	}
}

// TestShuffleStages joins three tables on two workers, each join on its
// own keys, through a coordinator that shuffles them stage after stage
// and one that gathers them: the answers agree — row-wise, aggregated,
// with a small table broadcast to the last stage — and the plan is the
// multi-stage one, its stage partitions served by both workers.
func TestShuffleStages(t *testing.T) {
	ctx := context.Background()
	s, _, shuffled, gathered := startShuffleClusters(t, 4<<10, false)
	execUpdate(t, shuffled, `CREATE TABLE st_orders AS SELECT range AS o_key, range % 5000 AS o_cust, CAST(range % 97 AS DECIMAL(12,2)) AS o_price, DATE '2020-01-01' + CAST(range % 400 AS INTEGER) AS o_date FROM range(60000)`)
	execUpdate(t, shuffled, `CREATE TABLE st_items AS SELECT range % 60000 AS i_order, CAST(range % 3000 AS INTEGER) AS i_part, range % 11 AS i_qty, 'item ' || range AS i_note FROM range(120000)`)
	execUpdate(t, shuffled, `CREATE TABLE st_parts AS SELECT CAST(range AS BIGINT) AS p_key, 'part ' || range AS p_name, range % 9 AS p_kind FROM range(3000)`)
	execUpdate(t, shuffled, `CREATE TABLE st_kinds AS SELECT range AS k_id, 'kind ' || range AS k_name FROM range(9)`)
	for _, q := range []string{
		`SELECT o_key, o_date, i_note, p_name FROM st_orders, st_items, st_parts WHERE o_key = i_order AND i_part = p_key AND o_cust < 40`,
		`SELECT p.p_kind, count(*) AS n, sum(o.o_price) AS price, max(i.i_qty) AS q FROM st_orders o JOIN st_items i ON o.o_key = i.i_order JOIN st_parts p ON p.p_key = i.i_part GROUP BY p.p_kind`,
		`SELECT k_name, count(*) FROM st_orders, st_items, st_parts, st_kinds WHERE o_key = i_order AND i_part = p_key AND p_kind = k_id AND o_date < DATE '2020-03-01' GROUP BY k_name`,
	} {
		plan, err := s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(q))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Strategy != planner.Shuffle || !strings.Contains(plan.Explain, "shuffle stages: applies") {
			t.Fatalf("%s: planned as %s, want shuffle stages:\n%s", q, plan.Strategy, plan.Explain)
		}
		sres, gres := mustQuery(t, shuffled, q), mustQuery(t, gathered, q)
		slices.Sort(sres.rows)
		slices.Sort(gres.rows)
		if !slices.Equal(sres.rows, gres.rows) || len(sres.rows) == 0 {
			t.Fatalf("%s: shuffled %d rows, gathered %d, or they differ: %.300q\n%s", q, len(sres.rows), len(gres.rows), sres.rows, plan.Explain)
		}
		t.Logf("%s: %d rows alike", q, len(sres.rows))
	}
	res := mustQuery(t, shuffled, `EXPLAIN ANALYZE SELECT count(*) FROM st_orders, st_items, st_parts WHERE o_key = i_order AND i_part = p_key`)
	served := map[string]bool{}
	for _, r := range res.rows {
		if strings.Contains(r, "(__icefloe_s1) |") {
			if _, loc, ok := strings.Cut(r, "served by "); ok {
				served[strings.Fields(loc)[0]] = true
			}
		}
	}
	if len(served) != 2 {
		t.Fatalf("stage 1 partitions served by %v, want both workers:\n%s", served, strings.Join(res.rows, "\n"))
	}
}

// startShuffleClusters starts two workers behind a coordinator that
// shuffles what it can (s, shuffled) and one that gathers (gc, gathered,
// reading the warehouse in place when direct), both with broadcast as
// their broadcast size.
func startShuffleClusters(t *testing.T, broadcast int64, direct bool) (s *cluster.Standalone, gc *cluster.Coordinator, shuffled, gathered adbc.Connection) {
	t.Helper()
	ctx := context.Background()
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	s, err = cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen: "127.0.0.1:0", WorkerHost: "127.0.0.1", Workers: 2, DataDir: dataDir, Key: key,
		WorkerEngine:   engine.Options{Threads: 1, MemoryLimit: "1GB"},
		BroadcastBytes: broadcast, ShuffleBytes: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var locs []string
	for _, w := range s.Workers {
		locs = append(locs, w.Location())
	}
	opts := cluster.CoordinatorOptions{
		Listen: "127.0.0.1:0", Key: key, Mounts: s.Mounts, Workers: fleet.NewStaticWorkers(locs...),
		DefaultCatalog: catalog.LocalCatalogName, DefaultSchema: catalog.DefaultSchema,
		Engine:         engine.Options{Threads: 1, TempDir: t.TempDir()},
		BroadcastBytes: broadcast, ShuffleBytes: 1 << 50,
	}
	if direct {
		opts.DirectDirs = []string{filepath.Join(dataDir, "warehouse")}
	}
	gc, err = cluster.StartCoordinator(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	return s, gc, adbcConn(t, s.Addr()), adbcConn(t, gc.Addr)
}
