package integration

import (
	"context"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/planner"
)

// TestExplainAndFlightInfo checks EXPLAIN's rows and the FlightInfo details
// of each strategy.
func TestExplainAndFlightInfo(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	ctx := context.Background()
	cl := flightClient(t, s.Addr())
	cases := []struct {
		q        string
		strategy string
		ordered  bool
	}{
		{"SELECT id, status FROM orders WHERE status = 'shipped'", "scatter", false},
		{"SELECT o.id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id", "scatter with broadcast", false},
		{"SELECT id FROM orders UNION ALL SELECT id FROM customers", "scatter (UNION ALL", false},
		{"SELECT status, count(*) FROM orders GROUP BY status ORDER BY 2 DESC", "two-phase (aggregate)", true},
		{"SELECT id FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 5", "gather", true},
		{"SELECT id, amount FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 5", "two-phase (top-n)", true},
		{"SELECT DISTINCT status FROM orders", "two-phase (distinct)", false},
		{"SELECT count(DISTINCT customer_id) FROM orders", "gather", false},
		{"SELECT id FROM orders LIMIT 7", "two-phase (limit)", false},
	}
	for _, c := range cases {
		res := mustQuery(t, cnxn, "EXPLAIN "+c.q)
		text := strings.Join(res.rows, "\n")
		if !strings.Contains(text, "strategy | "+c.strategy) {
			t.Errorf("EXPLAIN %s: want strategy %q in\n%s", c.q, c.strategy, text)
		}
		for _, item := range []string{"table | local.default.", "files | ", "fragment | ", "endpoint 0 | grpc://"} {
			if !strings.Contains(text, item) {
				t.Errorf("EXPLAIN %s: no %q row in\n%s", c.q, item, text)
			}
		}
		info, err := cl.Execute(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if info.Ordered != c.ordered {
			t.Errorf("%s: FlightInfo.ordered = %v, want %v", c.q, info.Ordered, c.ordered)
		}
		for _, ep := range info.Endpoint {
			exp := ep.ExpirationTime.AsTime()
			if exp.Before(time.Now()) || exp.After(time.Now().Add(2*time.Hour)) {
				t.Errorf("%s: endpoint expiration %v", c.q, exp)
			}
		}
	}
	for _, n := range []int{0, 1, 7, 5000} {
		res := mustQuery(t, cnxn, fmt.Sprintf("SELECT id FROM orders WHERE status IS NOT NULL LIMIT %d", n))
		if len(res.rows) != n {
			t.Errorf("LIMIT %d returned %d rows", n, len(res.rows))
		}
	}
	// A bare projection whose types match what iceberg-go reads streams
	// without DuckDB; anything with an expression or a filter does not.
	for q, want := range map[string]bool{
		"SELECT * FROM customers":                      true,
		"SELECT id, name FROM customers":               true,
		"SELECT * FROM orders":                         true,
		"SELECT id + 1 FROM customers":                 false,
		"SELECT * FROM customers WHERE country = 'DE'": false,
		"SELECT * EXCLUDE (name) FROM customers":       false,
	} {
		res := mustQuery(t, cnxn, "EXPLAIN "+q)
		got := strings.Contains(strings.Join(res.rows, "\n"), "passthrough | ")
		if got != want {
			t.Errorf("EXPLAIN %s: passthrough = %v, want %v", q, got, want)
		}
		if want {
			assertSameResult(t, mustQuery(t, cnxn, q), reference(t, s, q, "customers", "orders"), false)
		}
	}
	// Partition pruning shows in EXPLAIN: orders is partitioned by
	// day(ordered_at), customers by country.
	res := mustQuery(t, cnxn, "EXPLAIN SELECT id FROM orders WHERE ordered_at >= TIMESTAMPTZ '2024-01-20 00:00:00+00' AND ordered_at < TIMESTAMPTZ '2024-01-21 00:00:00+00'")
	text := strings.Join(res.rows, "\n")
	if !strings.Contains(text, "files | local.default.orders: 1 of 30 files") {
		t.Errorf("a one-day predicate must read one of 30 daily files:\n%s", text)
	}
}

// TestChildFailureNamesChild: when a child fragment fails, the parent fails
// with the child's error and location. (With iceberg-go reads: a worker
// that reads local files itself pulls no children for gathers.)
func TestChildFailureNamesChild(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo(), IcebergGoReads())
	cnxn := adbcConn(t, s.Addr())
	ctx := context.Background()
	p, err := s.Mounts.LoadTable(ctx, catalog.TableRef{Catalog: "local", Schema: "default", Table: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := p.Table.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Gather children are bare scans: streamed without DuckDB.
	plan, err := s.Coordinator.Planner.Plan(ctx, planner.Session{Catalog: "local", Schema: "default"}, parse.Must("SELECT count(DISTINCT customer_id) FROM orders"))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Strategy != planner.Gather || !strings.Contains(plan.Explain, "scan fragments without DuckDB") {
		t.Errorf("gather children are not passthrough:\n%s", plan.Explain)
	}
	victim := tasks[len(tasks)/2].File.FilePath()
	if err := os.Remove(strings.TrimPrefix(victim, "file://")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT status, count(*) FROM orders GROUP BY status",    // two-phase
		"SELECT count(DISTINCT customer_id) FROM orders",         // gather
		"SELECT id, row_number() OVER (ORDER BY id) FROM orders", // gather
	} {
		_, err := query(t, cnxn, q)
		if err == nil {
			t.Fatalf("%s: succeeded over a missing data file", q)
		}
		base := victim[strings.LastIndex(victim, "/")+1:]
		if !strings.Contains(err.Error(), "child fragment at grpc://") || !strings.Contains(err.Error(), base) {
			t.Errorf("%s: error must name the child's location and the file %s: %v", q, base, err)
		}
	}
}

// TestUnionAllSameTableEveryLayout: a one-group (and many-group) table under
// UNION ALL is read exactly once per branch, with any worker count.
func TestUnionAllSameTableEveryLayout(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			s := StartCluster(t, Workers(workers))
			cnxn := adbcConn(t, s.Addr())
			execUpdate(t, cnxn, "CREATE TABLE one (id BIGINT)")
			execUpdate(t, cnxn, "INSERT INTO one VALUES (1), (2), (3)")
			execUpdate(t, cnxn, "CREATE TABLE many (id BIGINT)")
			for i := 0; i < 5; i++ {
				execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO many VALUES (%d), (%d)", 2*i, 2*i+1))
			}
			for _, tbl := range []string{"one", "many"} {
				for _, q := range []string{
					"SELECT id FROM " + tbl + " UNION ALL SELECT id FROM " + tbl + " ORDER BY id",
					"SELECT id FROM " + tbl + " UNION ALL SELECT id FROM " + tbl,
				} {
					got := mustQuery(t, cnxn, q)
					want := reference(t, s, q, tbl)
					assertSameResult(t, got, want, strings.Contains(q, "ORDER BY"))
				}
			}
		})
	}
}
