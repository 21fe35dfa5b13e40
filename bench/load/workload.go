package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// The kinds of work, and how often a mixed client picks each.
const (
	kindScan      = "scan"
	kindAggregate = "aggregate"
	kindPoint     = "point"
	kindInsert    = "insert"
	kindCross     = "cross join"
)

var mixWeights = []struct {
	kind   string
	weight int
}{{kindScan, 10}, {kindAggregate, 25}, {kindPoint, 45}, {kindInsert, 20}}

// opTimeout bounds one operation on the client side, far above the
// server's statement timeout, so a hung call still ends the run.
const opTimeout = 3 * time.Minute

// op is one statement a client sends and how its answer is checked.
type op struct {
	kind, name, sql string
	update          bool
	countOnly       bool                         // a scan: only the row count is kept
	check           func(rows [][]string) string // "" when right; nil: not checked
	wantRows        int64                        // for countOnly
	insert          [2]int64                     // client, seq of an INSERT
}

// workload builds the ops of the checked queries from what was loaded.
type workload struct {
	exp   *expected
	dates []int32
	// the order with the largest o_totalprice (the top pair of the sort
	// cross join is it with itself)
	maxPriceKey int64
}

func newWorkload(exp *expected) *workload {
	w := &workload{exp: exp, dates: slices.Sorted(maps.Keys(exp.ordersByDate)), maxPriceKey: exp.maxPriceKey}
	return w
}

func (w *workload) scan(r *rand.Rand) op {
	if r.IntN(2) == 0 {
		return op{kind: kindScan, name: "SELECT * FROM orders", sql: "SELECT * FROM orders", countOnly: true, wantRows: w.exp.orders}
	}
	q := "SELECT l_orderkey, l_partkey, l_quantity, l_shipdate FROM lineitem"
	return op{kind: kindScan, name: "4 columns of lineitem", sql: q, countOnly: true, wantRows: w.exp.lineitem}
}

func (w *workload) aggregate(r *rand.Rand) op {
	switch r.IntN(3) {
	case 0:
		q := `SELECT l_returnflag, l_linestatus, count(*) AS n, CAST(sum(l_quantity) AS BIGINT) AS qty, avg(l_extendedprice) AS price
FROM lineitem GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus`
		var want [][]string
		for _, k := range slices.SortedFunc(maps.Keys(w.exp.lineGroups), func(a, b [2]string) int {
			return strings.Compare(a[0]+a[1], b[0]+b[1])
		}) {
			g := w.exp.lineGroups[k]
			want = append(want, []string{k[0], k[1], strconv.FormatInt(g[0], 10), strconv.FormatInt(g[1], 10)})
		}
		return op{kind: kindAggregate, name: "Q1-like group by", sql: q, check: rowsPrefix(want)}
	case 1:
		q := "SELECT o_orderpriority, count(*) AS n, sum(o_totalprice) AS total FROM orders GROUP BY o_orderpriority ORDER BY o_orderpriority"
		var want [][]string
		for _, k := range slices.Sorted(maps.Keys(w.exp.ordersByPrio)) {
			want = append(want, []string{k, strconv.FormatInt(w.exp.ordersByPrio[k], 10)})
		}
		return op{kind: kindAggregate, name: "orders by priority", sql: q, check: rowsPrefix(want)}
	default:
		q := `SELECT count(*) AS n, sum(l_extendedprice * l_discount) AS revenue FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24`
		return op{kind: kindAggregate, name: "Q6-like filter", sql: q,
			check: rowsPrefix([][]string{{strconv.FormatInt(w.exp.q6Rows, 10)}})}
	}
}

func (w *workload) point(r *rand.Rand) op {
	switch r.IntN(3) {
	case 0:
		return op{kind: kindPoint, name: "SELECT 1", sql: "SELECT 1", check: rowsPrefix([][]string{{"1"}})}
	case 1:
		k := w.exp.orderKeys[r.IntN(len(w.exp.orderKeys))]
		q := fmt.Sprintf("SELECT o_orderkey, o_custkey, o_totalprice FROM orders WHERE o_orderkey = %d", k)
		return op{kind: kindPoint, name: "one order by key", sql: q, check: rowsPrefix([][]string{{strconv.FormatInt(k, 10)}})}
	default:
		d := w.dates[r.IntN(len(w.dates))]
		date := time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
		q := fmt.Sprintf("SELECT count(*) FROM orders WHERE o_orderdate = DATE '%s'", date)
		return op{kind: kindPoint, name: "orders of one day (one partition)", sql: q,
			check: rowsPrefix([][]string{{strconv.FormatInt(w.exp.ordersByDate[d], 10)}})}
	}
}

func insertOp(table string, client, seq int64) op {
	return op{kind: kindInsert, name: "one-row INSERT", update: true, insert: [2]int64{client, seq},
		sql: fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, client, seq)}
}

// crossJoin alternates a count over a non-equi condition of orders with
// itself and a top-N sort of the whole product.
func (w *workload) crossJoin(n int) op {
	if n%2 == 0 {
		const target = 7777
		var want int64
		for c, h := range w.exp.custKeys {
			want += h * w.exp.custKeys[target-c]
		}
		q := fmt.Sprintf("SELECT count(*) FROM orders a, orders b WHERE a.o_custkey + b.o_custkey = %d", target)
		return op{kind: kindCross, name: "count over orders × orders", sql: q,
			check: rowsPrefix([][]string{{strconv.FormatInt(want, 10)}})}
	}
	q := `SELECT a.o_orderkey, b.o_orderkey FROM orders a, orders b
ORDER BY a.o_totalprice + b.o_totalprice DESC, a.o_orderkey, b.o_orderkey LIMIT 3`
	o := op{kind: kindCross, name: "top 3 of orders × orders by price", sql: q}
	if w.maxPriceKey != 0 {
		k := strconv.FormatInt(w.maxPriceKey, 10)
		o.check = func(rows [][]string) string {
			if len(rows) != 3 || !slices.Equal(rows[0], []string{k, k}) {
				return fmt.Sprintf("%v, want 3 rows starting [%s %s]", first(rows), k, k)
			}
			return ""
		}
	}
	return o
}

// rowsPrefix checks that the answer has len(want) rows, each starting
// with want's cells.
func rowsPrefix(want [][]string) func([][]string) string {
	return func(got [][]string) string {
		if len(got) != len(want) {
			return fmt.Sprintf("%d rows, want %d (first %v)", len(got), len(want), first(got))
		}
		for i, w := range want {
			if len(got[i]) < len(w) || !slices.Equal(got[i][:len(w)], w) {
				return fmt.Sprintf("row %d: %v, want it to start %v", i, got[i], w)
			}
		}
		return ""
	}
}

func first(rows [][]string) [][]string { return rows[:min(len(rows), 3)] }

// run sends o on cnxn: an update's count, else the rows (cells as
// strings) or, for a scan, only their number.
func run(ctx context.Context, cnxn adbc.Connection, o op) (rows int64, cells [][]string, err error) {
	if o.update {
		n, err := update(ctx, cnxn, o.sql)
		return n, nil, err
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(o.sql); err != nil {
		return 0, nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rows += rec.NumRows()
		if o.countOnly {
			continue
		}
		for i := range int(rec.NumRows()) {
			row := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = col.ValueStr(i)
			}
			cells = append(cells, row)
		}
	}
	return rows, cells, rdr.Err()
}

// errCode names err by its gRPC code (what the server answered), or as a
// client-side failure.
func errCode(err error) string {
	var ae adbc.Error
	if errors.As(err, &ae) {
		if ae.VendorCode != 0 {
			return codes.Code(ae.VendorCode).String()
		}
		return "client " + ae.Code.String()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "client " + err.Error()
	}
	return "client error"
}

// tally is what one kind of op saw.
type tally struct {
	kind      string
	mu        sync.Mutex
	durations []time.Duration // of the ops that answered right
	errors    map[string]int
	samples   map[string]string // a message per error code
	byQuery   map[string]int    // "query: code" → errors
	perQuery  map[string][]time.Duration
	wrong     int
	wrongSeen string
	attempts  []attempt // kept for the cross-join client only
	last      time.Time // when the latest op ended
}

type attempt struct {
	Query   string  `json:"query"`
	Seconds float64 `json:"seconds"`
	Outcome string  `json:"outcome"` // "ok", a gRPC code, or "wrong"
}

func newTally(kind string) *tally {
	return &tally{kind: kind, errors: map[string]int{}, samples: map[string]string{}, byQuery: map[string]int{}, perQuery: map[string][]time.Duration{}}
}

func (t *tally) record(o op, took time.Duration, err error, wrong string, keep bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	outcome := "ok"
	switch {
	case err != nil:
		c := errCode(err)
		t.errors[c]++
		t.byQuery[o.name+": "+c]++
		if _, ok := t.samples[c]; !ok {
			t.samples[c] = truncate(err.Error(), 400)
		}
		outcome = c
	case wrong != "":
		t.wrong++
		if t.wrongSeen == "" {
			t.wrongSeen = o.name + ": " + wrong
		}
		outcome = "wrong"
	default:
		t.durations = append(t.durations, took)
		t.perQuery[o.name] = append(t.perQuery[o.name], took)
	}
	if keep {
		t.attempts = append(t.attempts, attempt{Query: o.name, Seconds: took.Seconds(), Outcome: outcome})
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// inserts records which INSERTs were acknowledged and which failed.
type inserts struct {
	mu     sync.Mutex
	acked  map[[2]int64]bool
	failed map[[2]int64]bool
}

func (in *inserts) add(key [2]int64, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if ok {
		in.acked[key] = true
	} else {
		in.failed[key] = true
	}
}

// client loops over ops until stop, recording each in tallies[kind];
// its INSERTs go to table.
func client(ctx context.Context, cnxn adbc.Connection, id int64, table string, stop time.Time, next func(r *rand.Rand, n int) op,
	tallies map[string]*tally, ins *inserts, keep bool) {
	r := rand.New(rand.NewPCG(uint64(id), 42))
	for n := 0; time.Now().Before(stop) && ctx.Err() == nil; n++ {
		o := next(r, n)
		if o.kind == kindInsert {
			o = insertOp(table, id, int64(n))
		}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		start := time.Now()
		rows, cells, err := run(octx, cnxn, o)
		took := time.Since(start)
		cancel()
		if ctx.Err() != nil {
			return // interrupted: not an outcome of the server's
		}
		wrong := ""
		switch {
		case err != nil:
		case o.update && rows != 1:
			wrong = fmt.Sprintf("updated %d rows, want 1", rows)
		case o.countOnly && rows != o.wantRows:
			wrong = fmt.Sprintf("%d rows, want %d", rows, o.wantRows)
		case o.check != nil:
			wrong = o.check(cells)
		}
		if o.kind == kindInsert {
			ins.add(o.insert, err == nil && wrong == "")
		}
		tallies[o.kind].record(o, took, err, wrong, keep)
	}
}

// mixed picks a kind by mixWeights, then one of its queries.
func (w *workload) mixed(r *rand.Rand, _ int) op {
	total := 0
	for _, m := range mixWeights {
		total += m.weight
	}
	x := r.IntN(total)
	for _, m := range mixWeights {
		if x < m.weight {
			switch m.kind {
			case kindScan:
				return w.scan(r)
			case kindAggregate:
				return w.aggregate(r)
			case kindPoint:
				return w.point(r)
			}
			return op{kind: kindInsert}
		}
		x -= m.weight
	}
	panic("unreachable")
}
