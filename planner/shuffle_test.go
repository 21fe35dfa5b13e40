package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/wire"
)

// shufflePlanner plans over t (id long, s string; 4 files) and u (k int,
// x string; 3 files) with every table above the broadcast size and the
// shuffle size at zero, unless opts says otherwise.
func shufflePlanner(t *testing.T, workers fixedWorkers, opts func(*Options)) (*Planner, *wire.Key) {
	t.Helper()
	p, key, cat := testPlannerWith(t, workers, 4, func(o *Options) {
		o.BroadcastBytes, o.ShuffleBytes = 1, -1
		if opts != nil {
			opts(o)
		}
	})
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "k", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.String})
	testTable(t, cat, "u", schema, 3, func(f, i int) []any {
		if i == 0 {
			return []any{nil, "null key"}
		}
		return []any{int32(f*10 + i), fmt.Sprint("x", i)}
	})
	return p, key
}

func TestShuffleDecision(t *testing.T) {
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	p, _ := shufflePlanner(t, twoWorkers, nil)
	small, _ := shufflePlanner(t, twoWorkers, func(o *Options) { o.BroadcastBytes, o.ShuffleBytes = 0, 0 })
	below, _ := shufflePlanner(t, twoWorkers, func(o *Options) { o.ShuffleBytes = 1 << 30 })
	one, _ := shufflePlanner(t, twoWorkers[:1], nil)
	cases := []struct {
		p        *Planner
		q        string
		strategy Strategy
		why      string // in EXPLAIN
	}{
		{p, "SELECT t.id, u.x FROM t JOIN u ON t.id = u.k", Shuffle, "shuffle row-wise"},
		{p, "SELECT t.id, u.x FROM t, u WHERE u.k = t.id AND t.s <> 'v1'", Shuffle, "on id = k"},
		{p, "SELECT * FROM t FULL JOIN u ON t.id = u.k AND t.s < u.x", Shuffle, "shuffle row-wise"},
		{p, "SELECT * FROM t RIGHT JOIN u ON id IS NOT DISTINCT FROM k", Shuffle, "shuffle row-wise"},
		{p, "SELECT * FROM t WHERE id IN (SELECT k FROM u)", Gather, "subquery"},
		{p, "SELECT count(*), sum(id) FROM t JOIN u ON t.id = u.k", Shuffle, "shuffle aggregate"},
		{p, "SELECT s, count(*) FROM t LEFT JOIN u ON t.id = u.k GROUP BY s ORDER BY 2 DESC", Shuffle, "shuffle aggregate"},
		{p, "SELECT id, x FROM t JOIN u ON t.id = u.k ORDER BY id LIMIT 5", Shuffle, "shuffle top-n"},
		{p, "SELECT DISTINCT s FROM t JOIN u ON t.id = u.k", Shuffle, "shuffle distinct"},
		{p, "SELECT * FROM t JOIN u ON t.id > u.k", Gather, "no equality between"},
		{p, "SELECT * FROM t JOIN u ON t.s = u.x OR t.id = u.k", Gather, "no equality between"},
		{p, "SELECT * FROM t JOIN u ON t.s = u.x", Shuffle, "on s = x"},
		{p, "SELECT * FROM t a JOIN t b ON a.id = b.id", Gather, "read 2 times"},
		{p, "SELECT count(DISTINCT x) FROM t JOIN u ON t.id = u.k", Gather, "distinct aggregate"},
		{p, "SELECT s, count(DISTINCT id) FROM t GROUP BY s", Shuffle, "shuffle row-wise (group by partitioned on s"},
		{p, "SELECT s AS g, median(id) AS m FROM t GROUP BY 1 ORDER BY m DESC LIMIT 2", Shuffle, "shuffle top-n (group by partitioned on s"},
		{p, "SELECT DISTINCT count(DISTINCT id) FROM t GROUP BY s", Shuffle, "shuffle distinct (group by"},
		{p, "SELECT id, row_number() OVER (PARTITION BY s ORDER BY id) FROM t", Shuffle, "shuffle row-wise (window partitioned on s"},
		{p, "SELECT id, row_number() OVER (PARTITION BY s ORDER BY id), rank() OVER (ORDER BY id) FROM t", Gather, "share no PARTITION BY"},
		{p, "SELECT s, count(DISTINCT id), rank() OVER (ORDER BY s) FROM t GROUP BY s", Gather, "window function over groups"},
		{p, "SELECT count(DISTINCT s), count(*), min(id) FROM t WHERE id > 2", Shuffle, "shuffle aggregate (count(DISTINCT) partitioned on s"},
		{p, "SELECT count(DISTINCT s), count(DISTINCT id) FROM t", Gather, "no group key"},
		{p, "SELECT count(DISTINCT s), median(id) FROM t", Gather, "no group key"},
		{p, "SELECT s, count(*) FROM t GROUP BY s", TwoPhase, "two-phase"},
		{small, "SELECT s, count(DISTINCT id) FROM t GROUP BY s", Gather, "below the shuffle size"},
		{p, "SELECT id FROM t INTERSECT SELECT k FROM u", Shuffle, "shuffle row-wise (intersect partitioned on id"},
		{p, "SELECT * FROM t EXCEPT ALL SELECT * FROM u", Shuffle, `hash(CAST("k" AS BIGINT))`},
		{p, "SELECT s FROM t UNION SELECT x FROM u ORDER BY 1 LIMIT 3", Shuffle, "shuffle top-n (union"},
		{p, "SELECT id FROM t INTERSECT SELECT id FROM t WHERE s = 'v1'", Shuffle, "shuffle row-wise (intersect"},
		{p, "SELECT id FROM t EXCEPT SELECT s FROM t", Gather, "on two columns"},
		{p, "SELECT s, count(*) FROM t GROUP BY s INTERSECT SELECT x, 1 FROM u", Gather, "not a row-wise select"},
		{small, "SELECT * FROM t JOIN u ON t.id = u.k", Scatter, "broadcast of local.default.u"},
		{small, "SELECT * FROM t FULL JOIN u ON t.id = u.k", Gather, "0 large tables"},
		{below, "SELECT * FROM t JOIN u ON t.id = u.k", Gather, "below the shuffle size"},
		{one, "SELECT * FROM t JOIN u ON t.id = u.k", Gather, "one worker"},
	}
	for _, c := range cases {
		plan, err := planText(ctx, c.p, s, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if plan.Strategy != c.strategy || !strings.Contains(plan.Explain, c.why) {
			t.Errorf("%s: got %s, want %s with %q in\n%s", c.q, plan.Strategy, c.strategy, c.why, plan.Explain)
		}
	}
}

// TestShuffleTickets checks the fragments: two partitions, each pulling
// its partition of every group of both tables, keys hashed as BIGINT.
func TestShuffleTickets(t *testing.T) {
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	p, key := shufflePlanner(t, twoWorkers, nil)
	open := func(b []byte) *wire.Ticket {
		tk, err := key.Open(b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	// checkPartition checks fragment j's children: partition j of each
	// producer, 4 groups of t and 3 of u at most (groups of one worker
	// may merge), every file once; a producer's tickets of both
	// partitions name it alike and go to the same worker.
	producers := map[string]string{} // producer → its child's SQL and locations
	checkPartition := func(tk *wire.Ticket, j int) {
		t.Helper()
		files := map[string]int{}
		for _, c := range tk.Children {
			ct := open(c.Ticket)
			if !ct.Child || len(ct.Scans) != 1 {
				t.Fatalf("partition %d child %s: want one scan, a child", j, ct)
			}
			if ct.Partition == nil || ct.Partition.Index != j || ct.Partition.Count != 2 {
				t.Fatalf("partition %d child %s: want partition %d of 2", j, ct, j)
			}
			want := fmt.Sprintf(`SELECT *, hash("id") %% 2 AS __icefloe_partition FROM (SELECT * FROM "%s")`, c.View)
			if ct.Scans[0].View != c.View || !c.Once || c.Rows <= 0 {
				t.Errorf("child over %s reads %s (once %v, %d rows): %s", c.View, ct.Scans[0].View, c.Once, c.Rows, ct.SQL)
			}
			if strings.Contains(ct.Scans[0].Table, ".u") {
				want = fmt.Sprintf(`SELECT *, hash(CAST("k" AS BIGINT)) %% 2 AS __icefloe_partition FROM (SELECT * FROM "%s")`, c.View)
			}
			if ct.SQL != want {
				t.Errorf("partition %d child SQL %q, want %q", j, ct.SQL, want)
			}
			same := ct.SQL + " at " + strings.Join(c.Locations, ",")
			if prev, ok := producers[ct.Partition.Producer]; ok && prev != same {
				t.Errorf("producer %s: %s, and %s for another partition", ct.Partition.Producer, same, prev)
			}
			producers[ct.Partition.Producer] = same
			files[ct.Scans[0].Table] += len(ct.Scans[0].Tasks)
		}
		if files["local.default.t"] != 4 || files["local.default.u"] != 3 {
			t.Errorf("partition %d reads files %v, want t's 4 and u's 3", j, files)
		}
	}
	plan, err := planText(ctx, p, s, "SELECT t.id, u.x FROM t JOIN u ON t.id = u.k")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Endpoints) != 2 || plan.Endpoints[0].Locations[0] == plan.Endpoints[1].Locations[0] {
		t.Fatalf("want 2 endpoints on different workers:\n%s", plan.Explain)
	}
	for j, ep := range plan.Endpoints {
		checkPartition(open(ep.Ticket), j)
	}
	if len(producers) < 2 || len(producers) > 7 {
		t.Errorf("%d producers, want one per group of t and u", len(producers))
	}
	clear(producers) // another plan names its producers anew
	plan, err = planText(ctx, p, s, "SELECT count(*) FROM t JOIN u ON t.id = u.k")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Endpoints) != 1 {
		t.Fatalf("want one final endpoint:\n%s", plan.Explain)
	}
	final := open(plan.Endpoints[0].Ticket)
	if len(final.Children) != 2 || len(final.Scans) != 0 {
		t.Fatalf("final: %s, want 2 partition children", final)
	}
	for j, c := range final.Children {
		if c.View != partialsView {
			t.Errorf("partition %d feeds %s", j, c.View)
		}
		checkPartition(open(c.Ticket), j)
	}
}
