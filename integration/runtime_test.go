package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// waitRow polls q until one of its rows satisfies ok, and returns it.
func waitRow(t testing.TB, cnxn adbc.Connection, q string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := mustQuery(t, cnxn, q)
		for _, r := range res.rows {
			if ok(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no row as wanted in %q", q, res.rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runSlow starts slowQuery on cnxn and waits until watch sees it running
// in system.runtime.queries; it returns the query's id and where the
// client's answer arrives.
func runSlow(t testing.TB, cnxn, watch adbc.Connection) (string, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- runADBC(cnxn, slowQuery, false, false) }()
	row := waitRow(t, watch, "SELECT query_id, state FROM system.runtime.queries WHERE sql LIKE '%orders a, orders b%'",
		func(r string) bool { return strings.HasSuffix(r, "| running") })
	return strings.TrimSuffix(row, " | running"), done
}

// The system.runtime tables list what the coordinator ran, its workers
// and their caches, and filter, sort and join like any table;
// CALL system.cancel_query ends a running query on its workers and the
// client's read fails with Cancelled.
func TestSystemRuntimeTables(t *testing.T) {
	s := StartCluster(t, Demo(), Workers(2))
	cnxn := adbcConn(t, s.Addr())

	res := mustQuery(t, cnxn, "SELECT count(*) FROM orders WHERE amount > 12345")
	if len(res.rows) != 1 {
		t.Fatalf("count: %v", res.rows)
	}
	row := waitRow(t, cnxn, `SELECT state, sql, kind, endpoints_done = endpoints_total AND endpoints_total > 0, rows, bytes > 0, error IS NULL, ended >= started
		FROM system.runtime.queries WHERE sql LIKE '%amount > ?%' ORDER BY started`, func(r string) bool { return strings.HasPrefix(r, "finished") })
	want := "finished | SELECT count(*) FROM orders WHERE amount > ? | query | true | 1 | true | true | true"
	if row != want {
		t.Fatalf("finished query row\n got %s\nwant %s", row, want)
	}

	workers := mustQuery(t, cnxn, "SELECT health, reachable, draining, cache_max_bytes > 0 FROM system.runtime.workers ORDER BY address")
	if got := strings.Join(workers.rows, "; "); got != "live | true | false | true; live | true | false | true" {
		t.Fatalf("workers: %s", got)
	}
	joined := mustQuery(t, cnxn, `SELECT count(*), sum(c.hits + c.misses) > 0 FROM system.runtime.workers w
		JOIN system.runtime.caches c ON c.node = w.address WHERE c.cache = 'metadata'`)
	if got := joined.rows[0]; got != "2 | true" {
		t.Fatalf("workers joined with caches: %s", got)
	}
	// The coordinator's caches: a query planned twice hits the plan cache
	// (memo class "plan") the second time.
	for range 2 {
		mustQuery(t, cnxn, "SELECT count(*) FROM orders WHERE amount > 4242")
	}
	coord := mustQuery(t, cnxn, `SELECT cache, hits > 0, entries > 0, max_bytes > 0 FROM system.runtime.caches
		WHERE node = 'coordinator' AND cache IN ('metadata', 'parse', 'plan', 'scan') ORDER BY cache`)
	if got := strings.Join(coord.rows, "; "); got != "metadata | true | true | true; parse | true | true | true; plan | true | true | true; scan | true | true | true" {
		t.Fatalf("the coordinator's caches: %s", got)
	}
	// The workers' fragment caches: a scatter query repeated reuses the
	// connections of its endpoints (the demo's files are read in place).
	for range 3 {
		mustQuery(t, cnxn, "SELECT id, status FROM orders WHERE id = 42")
	}
	frag := mustQuery(t, cnxn, `SELECT count(*), sum(hits) > 0, max(max_entries) > 0 FROM system.runtime.caches WHERE cache = 'fragment'`)
	if got := frag.rows[0]; got != "2 | true | true" {
		t.Fatalf("the workers' fragment caches: %s", got)
	}

	id, done := runSlow(t, adbcConn(t, s.Addr()), cnxn)
	cancelled := mustQuery(t, cnxn, fmt.Sprintf("CALL system.cancel_query('%s')", id))
	if got := strings.Join(cancelled.rows, "; "); got != id+" |  | cancelled" {
		t.Fatalf("cancel_query: %s", got)
	}
	select {
	case err := <-done:
		wantLimit(t, "cancelled query", err, codes.Canceled, "cancelled")
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled query still runs")
	}
	state := mustQuery(t, cnxn, fmt.Sprintf("SELECT state, error FROM system.runtime.queries WHERE query_id = '%s'", id))
	if len(state.rows) != 1 || !strings.HasPrefix(state.rows[0], "cancelled | ") {
		t.Fatalf("cancelled query's row: %v", state.rows)
	}
	_, err := query(t, cnxn, "CALL system.cancel_query('0123456789abcdef')")
	wantLimit(t, "cancel an unknown id", err, codes.NotFound, "no running query has this id")
}

// With authentication on, a principal sees only its own statements and
// may not cancel another's nor read the workers; an admin sees and
// cancels every statement.
func TestSystemRuntimePermissions(t *testing.T) {
	e := startSecure(t)
	root, alice, bob := e.login(t, "root"), e.login(t, "alice"), e.login(t, "bob")
	done := make(chan error, 1)
	go func() { done <- runADBC(bob, slowQuery, false, false) }()
	const find = "SELECT query_id, principal, state FROM system.runtime.queries WHERE sql LIKE '%orders a, orders b%'"
	row := waitRow(t, root, find, func(r string) bool { return strings.HasSuffix(r, "| bob | running") })
	id := strings.TrimSuffix(row, " | bob | running")
	if got := waitRow(t, bob, find, func(r string) bool { return strings.HasPrefix(r, id) }); got != row {
		t.Fatalf("bob sees his query as %q, want %q", got, row)
	}
	if res := mustQuery(t, alice, find); len(res.rows) != 0 {
		t.Fatalf("alice sees bob's query: %v", res.rows)
	}
	mine := mustQuery(t, alice, "SELECT DISTINCT principal FROM system.runtime.queries")
	if got := strings.Join(mine.rows, ","); got != "alice" {
		t.Fatalf("alice sees statements of %s", got)
	}
	_, err := query(t, alice, fmt.Sprintf("CALL system.cancel_query('%s')", id))
	wantLimit(t, "alice cancels bob's query", err, codes.PermissionDenied, "only an admin may cancel another principal's query")
	for _, tbl := range []string{"workers", "caches"} {
		_, err := query(t, alice, "SELECT * FROM system.runtime."+tbl)
		wantLimit(t, "alice reads "+tbl, err, codes.PermissionDenied, "alice may not read system.runtime."+tbl)
	}
	if res := mustQuery(t, root, "SELECT count(*) FROM system.runtime.workers WHERE health = 'live' AND reachable"); res.rows[0] != "2" {
		t.Fatalf("root sees live workers: %v", res.rows)
	}
	mustQuery(t, root, fmt.Sprintf("CALL system.cancel_query('%s')", id))
	select {
	case err := <-done:
		wantLimit(t, "bob's cancelled query", err, codes.Canceled, "cancelled")
	case <-time.After(30 * time.Second):
		t.Fatal("bob's cancelled query still runs")
	}
}
