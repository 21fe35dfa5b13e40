package integration

import (
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
	s := StartCluster(t, Workers(2), Demo(), WithMetrics(reg))
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
		"SELECT count(*) FROM orders WHERE amount > 10": "a WHERE clause",
	} {
		ex := explainOf(t, cnxn, q)
		if !strings.Contains(ex, "not answered from metadata: "+why) || strings.Contains(ex, "answered from metadata\t") {
			t.Errorf("EXPLAIN %s:\n%s", q, ex)
		}
	}
}
