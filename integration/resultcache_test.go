package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

// dashboardQuery is a tile's query: an aggregate, one endpoint.
const dashboardQuery = "SELECT status, count(*) AS n, sum(amount) AS total FROM orders GROUP BY status ORDER BY status"

// cacheState is what EXPLAIN says of q and the result cache: hit, miss,
// off, not used, or "" when it says nothing.
func cacheState(t testing.TB, cnxn adbc.Connection, q string) string {
	t.Helper()
	for _, l := range strings.Split(explainOf(t, cnxn, q), "\n") {
		if v, ok := strings.CutPrefix(l, "result cache\t"); ok {
			for _, st := range []string{"hit", "miss", "off", "not used"} {
				if strings.HasPrefix(v, st) {
					return st
				}
			}
		}
	}
	return ""
}

func TestResultCache(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := StartCluster(t, Workers(2), Demo(), WithMetrics(reg), ResultCache())
	// With cookies, so SET and USE hold for the session (sent through
	// GetFlightInfo, as Python's driver sends every statement).
	cnxn := adbcConn(t, s.Addr(), map[string]string{adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled})
	if st := cacheState(t, cnxn, dashboardQuery); st != "miss" {
		t.Fatalf("first EXPLAIN: %q, want miss", st)
	}
	first := mustQuery(t, cnxn, dashboardQuery)
	before := workerTickets(t, reg)
	if st := cacheState(t, cnxn, dashboardQuery); st != "hit" {
		t.Fatalf("after one run: %q, want hit", st)
	}
	_, eps := partitions(t, cnxn, dashboardQuery)
	if len(eps) != 1 || len(eps[0].Location) != 0 {
		t.Fatalf("a hit is one endpoint without locations, got %v", eps)
	}
	hit := mustQuery(t, cnxn, dashboardQuery)
	if !slices.Equal(hit.rows, first.rows) || !hit.schema.Equal(first.schema) {
		t.Fatalf("hit returned\n%v %v\nwant\n%v %v", hit.schema, hit.rows, first.schema, first.rows)
	}
	if n := workerTickets(t, reg) - before; n != 0 {
		t.Fatalf("hits made %v worker calls", n)
	}
	fams := gathered(t, reg)
	if v := fams["icefloe_result_cache_hits_total"].GetMetric()[0].GetCounter().GetValue(); v < 2 {
		t.Errorf("hits metric %v", v)
	}
	if v := fams["icefloe_result_cache_entries"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("entries metric %v", v)
	}
	if st := s.Coordinator.ResultCache.Stats(); st.Entries != 1 || st.Bytes <= 0 {
		t.Errorf("Stats %+v", st)
	}

	// A session setting off: no hit, still the right rows; back on: hit.
	mustQuery(t, cnxn, "SET result_cache = off")
	if st := cacheState(t, cnxn, dashboardQuery); st != "off" {
		t.Fatalf("with result_cache off: %q", st)
	}
	if got := mustQuery(t, cnxn, dashboardQuery); !slices.Equal(got.rows, first.rows) {
		t.Fatalf("rows with the cache off: %v", got.rows)
	}
	mustQuery(t, cnxn, "RESET result_cache")
	if st := cacheState(t, cnxn, dashboardQuery); st != "hit" {
		t.Fatalf("after RESET: %q, want hit", st)
	}

	// A session setting that changes the answer: another schema.
	execUpdate(t, cnxn, "CREATE SCHEMA other")
	execUpdate(t, cnxn, "CREATE TABLE other.orders AS SELECT * FROM orders WHERE status = 'shipped'")
	mustQuery(t, cnxn, "USE other")
	if st := cacheState(t, cnxn, dashboardQuery); st != "miss" {
		t.Fatalf("in another schema: %q, want miss", st)
	}
	if got := mustQuery(t, cnxn, dashboardQuery); slices.Equal(got.rows, first.rows) || len(got.rows) != 1 {
		t.Fatalf("rows in schema other: %v", got.rows)
	}
	mustQuery(t, cnxn, `USE "default"`)

	// A commit changes the table: miss, and the new answer.
	execUpdate(t, cnxn, "INSERT INTO orders (id, customer_id, status, amount, ordered_at) VALUES (-1, 1, 'zzz', 1.5, TIMESTAMP '2026-01-01 00:00:00')")
	if st := cacheState(t, cnxn, dashboardQuery); st != "miss" {
		t.Fatalf("after a commit: %q, want miss", st)
	}
	after := mustQuery(t, cnxn, dashboardQuery)
	if len(after.rows) != len(first.rows)+1 || !slices.Contains(after.rows, "zzz | 1 | 1.5") {
		t.Fatalf("after the commit: %v", after.rows)
	}

	// Answers that change between runs are not kept.
	for _, q := range []string{
		"SELECT status, count(*) + random() FROM orders GROUP BY status",
		"SELECT status, now() FROM orders GROUP BY status",
		"SELECT status, current_timestamp FROM orders GROUP BY status",
		"SELECT count(uuid()) FROM orders",
		"SELECT count(*) FROM orders USING SAMPLE 10%",
		"SELECT count(*), current_date FROM orders",
		"SELECT count(*), current_localtimestamp() FROM orders",
	} {
		if st := cacheState(t, cnxn, q); st != "not used" {
			t.Errorf("%s: %q, want not used", q, st)
		}
	}
}

// TestResultCacheAcrossPrincipals: a result one principal's run kept is
// never served to a principal whose grants differ.
func TestResultCacheAcrossPrincipals(t *testing.T) {
	e := startSecure(t, func(o *cluster.StandaloneOptions) { o.ResultCacheBytes = 0 })
	root := e.login(t, "root")
	execUpdate(t, root, "CREATE SCHEMA sales")
	execUpdate(t, root, "CREATE TABLE sales.orders AS SELECT id, status, amount FROM orders LIMIT 2000")
	q := "SELECT status, count(*) FROM sales.orders GROUP BY status ORDER BY status"
	want := mustQuery(t, root, q)
	if st := cacheState(t, root, q); st != "hit" {
		t.Fatalf("root's second run: %q, want hit", st)
	}
	alice := e.login(t, "alice")
	if st := cacheState(t, alice, q); st != "miss" {
		t.Fatalf("alice after root: %q, want miss", st)
	}
	if got := mustQuery(t, alice, q); !slices.Equal(got.rows, want.rows) {
		t.Fatalf("alice's rows %v, want %v", got.rows, want.rows)
	}
	if st := cacheState(t, alice, q); st != "hit" {
		t.Fatalf("alice's second run: %q, want hit", st)
	}
}

// TestResultCacheTwoCoordinators: a commit through another coordinator
// sharing the SQL catalog makes the next query miss — the catalog's
// current metadata is what the key holds, not a message.
func TestResultCacheTwoCoordinators(t *testing.T) {
	ctx := context.Background()
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{Listen: "127.0.0.1:0", WorkerHost: "127.0.0.1", Workers: 2,
		DataDir: dir, Demo: true, Key: key, WorkerEngine: engine.Options{Threads: 1, MemoryLimit: "1GB"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	// The second coordinator has mounts and caches of its own over the
	// same catalog database and warehouse.
	cat, props, err := catalog.OpenLocal(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	mounts := catalog.NewMounts()
	mounts.SetCache(catalog.NewMetadataCache(0))
	if err := mounts.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, w := range s.Workers {
		locs = append(locs, w.Location())
	}
	c2, err := cluster.StartCoordinator(ctx, cluster.CoordinatorOptions{Listen: "127.0.0.1:0", Key: key, Mounts: mounts,
		Workers: fleet.NewStaticWorkers(locs...), DefaultCatalog: catalog.LocalCatalogName, DefaultSchema: catalog.DefaultSchema,
		Engine: engine.Options{Threads: 1, TempDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c2.Close(); err != nil {
			t.Error(err)
		}
	})
	one, two := adbcConn(t, s.Addr()), adbcConn(t, c2.Addr)
	before := mustQuery(t, two, dashboardQuery)
	if st := cacheState(t, two, dashboardQuery); st != "hit" {
		t.Fatalf("second run on coordinator two: %q, want hit", st)
	}
	execUpdate(t, one, "DELETE FROM orders WHERE status = 'shipped'")
	if st := cacheState(t, two, dashboardQuery); st != "miss" {
		t.Fatalf("after a commit through coordinator one: %q, want miss", st)
	}
	after := mustQuery(t, two, dashboardQuery)
	if len(after.rows) != len(before.rows)-1 {
		t.Fatalf("coordinator two after the delete: %v (before %v)", after.rows, before.rows)
	}
	for _, r := range after.rows {
		if strings.HasPrefix(r, "shipped ") {
			t.Fatalf("deleted rows served: %v", after.rows)
		}
	}
}
