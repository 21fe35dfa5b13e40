package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gathered reads the registry's metrics by name.
func gathered(t testing.TB, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// workerTickets is how many tickets the cluster's workers were asked to
// serve (DoGet of a ticket, as a client or a peer pulls it).
func workerTickets(t testing.TB, reg *prometheus.Registry) float64 {
	t.Helper()
	var n float64
	if f := gathered(t, reg)["icefloe_worker_tickets_total"]; f != nil {
		for _, m := range f.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// explainOf runs EXPLAIN q and returns its lines as "item\tvalue".
func explainOf(t testing.TB, cnxn adbc.Connection, q string) string {
	t.Helper()
	return strings.ReplaceAll(strings.Join(mustQuery(t, cnxn, "EXPLAIN "+q).rows, "\n"), " | ", "\t")
}

// TestAnswersOnTheCoordinator: statements whose answer needs no table
// data are answered by the coordinator in the ticket of one endpoint
// without locations, right, and without a worker call.
func TestAnswersOnTheCoordinator(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := StartCluster(t, Workers(2), Demo(), WithMetrics(reg), ResultCache())
	cnxn := adbcConn(t, s.Addr())
	want := mustQuery(t, cnxn, "SELECT count(*) AS n FROM (SELECT id FROM orders)").rows
	before := workerTickets(t, reg)
	if before == 0 {
		t.Fatal("reading orders made no worker call: the counter does not count")
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT 1 AS one", "1"},
		{"SELECT 40 + 2, 'x' || 'y'", "42 | xy"},
		{"SELECT count(*) FROM orders", want[0]},
		{"SELECT count(*) AS a, count(*) AS b FROM orders", want[0] + " | " + want[0]},
		{"SHOW SCHEMAS", ""},
		{"SELECT table_name FROM information_schema.tables WHERE table_name = 'orders'", "orders"},
	} {
		_, eps := partitions(t, cnxn, c.q)
		if len(eps) != 1 || len(eps[0].Location) != 0 {
			t.Errorf("%s: want one endpoint without locations, got %v", c.q, eps)
		}
		got := mustQuery(t, cnxn, c.q)
		if c.want != "" && !slices.Equal(got.rows, []string{c.want}) {
			t.Errorf("%s: rows %v, want %s", c.q, got.rows, c.want)
		}
		if len(got.rows) == 0 {
			t.Errorf("%s: no rows", c.q)
		}
	}
	if after := workerTickets(t, reg); after != before {
		t.Fatalf("local answers made %v worker calls", after-before)
	}
	if ex := explainOf(t, cnxn, "SELECT count(*) FROM orders"); !strings.Contains(ex, "answered from metadata\tcount from 30 manifest entries") {
		t.Errorf("EXPLAIN of count(*) says no metadata answer:\n%s", ex)
	}
	// What the manifests cannot answer exactly is read.
	for q, why := range map[string]string{
		"SELECT count(*) FROM orders WHERE amount > 10": "a WHERE that is not column = constant on identity partition columns",
	} {
		ex := explainOf(t, cnxn, q)
		if !strings.Contains(ex, "not answered from metadata: "+why) || strings.Contains(ex, "answered from metadata\t") {
			t.Errorf("EXPLAIN %s:\n%s", q, ex)
		}
	}
}

// TestCountOfPartitions: count(*) of whole identity partitions comes from
// the manifests and equals what reading the files counts (the same query
// with a WHERE the manifests cannot answer), for each kind of partition
// column and value, NULLs, no match, several conditions, and after
// partition evolution and deletes, which fall back to reading.
func TestCountOfPartitions(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE p (k INTEGER, s VARCHAR, b BOOLEAN, big BIGINT, v DOUBLE) PARTITIONED BY (k, s, b, big)")
	for i := range 6 {
		execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO p VALUES (%d, 's%d', %v, %d, 1.5), (%d, NULL, NULL, NULL, 2.5), (NULL, '', true, -9223372036854775808, NULL)",
			i%3, i%2, i%2 == 0, int64(i)*5000000000, i%3))
	}
	check := func(where string, metadata bool) {
		t.Helper()
		q := "SELECT count(*) FROM p WHERE " + where
		ex := explainOf(t, cnxn, q)
		if got := strings.Contains(ex, "answered from metadata\t"); got != metadata {
			t.Errorf("%s: answered from metadata %v, want %v:\n%s", q, got, metadata, ex)
		}
		got := mustQuery(t, cnxn, q).rows
		// The same count read from the files: a conjunct the manifests
		// cannot answer (v is no partition column) that holds for every row.
		want := mustQuery(t, cnxn, "SELECT count(*) FROM p WHERE ("+where+") AND (v IS NULL OR v IS NOT NULL)").rows
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, reading says %v", q, got, want)
		}
	}
	for _, w := range []string{"k = 1", "1 = k", "p.k = 2", "k = 7", "k = 5000000000", "s = 's1'", "s = ''", "s = 'S1'",
		"big = 5000000000", "big = -9223372036854775808", "k = 0 AND s = 's0'", "k = 1 AND s = 's1' AND big = 5000000000"} {
		check(w, true)
	}
	for _, w := range []string{"k = NULL", "k IS NULL", "k > 1", "b = true", "k = 1 AND b = false", "k = 1 OR k = 2", "v = 1.5", "k = 1.0", "s LIKE 's%'", "k IN (1, 2)"} {
		check(w, false)
	}
	// A file written before the column was an identity partition cannot
	// say its rows all match: read.
	execUpdate(t, cnxn, "CREATE TABLE q (k INTEGER, v DOUBLE)")
	execUpdate(t, cnxn, "INSERT INTO q VALUES (1, 1), (2, 2)")
	execUpdate(t, cnxn, "ALTER TABLE q ADD PARTITION FIELD k")
	execUpdate(t, cnxn, "INSERT INTO q VALUES (1, 3)")
	if ex := explainOf(t, cnxn, "SELECT count(*) FROM q WHERE k = 1"); strings.Contains(ex, "answered from metadata\t") {
		t.Errorf("partition evolution answered from metadata:\n%s", ex)
	}
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM q WHERE k = 1").rows; !slices.Equal(got, []string{"2"}) {
		t.Errorf("count after evolution: %v", got)
	}
	// A copy-on-write delete rewrites files: still exact from metadata.
	execUpdate(t, cnxn, "DELETE FROM p WHERE v = 2.5")
	check("k = 1", true)
	// A merge-on-read table after a delete.
	execUpdate(t, cnxn, "CREATE TABLE r (k INTEGER, v DOUBLE) PARTITIONED BY (k) WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
	execUpdate(t, cnxn, "INSERT INTO r VALUES (1, 7.0), (1, 8.0), (2, 9.0)")
	execUpdate(t, cnxn, "DELETE FROM r WHERE v = 7.0")
	// (Whether the delete wrote a delete file or rewrote the file, the
	// count must be what reading says.)
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM r").rows; !slices.Equal(got, []string{"2"}) {
		t.Errorf("count(*) after a delete: %v", got)
	}
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM r WHERE k = 1").rows; !slices.Equal(got, []string{"1"}) {
		t.Errorf("count after a merge-on-read delete: %v", got)
	}
	if got := mustQuery(t, cnxn, "SELECT count(*) FROM p").rows; !slices.Equal(got, mustQuery(t, cnxn, "SELECT count(*) FROM p WHERE v IS NULL OR v IS NOT NULL").rows) {
		t.Errorf("count after delete: %v", got)
	}
}
