package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/internal/metrics"
)

// scrape GETs /metrics and parses it.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample sums the values of name's samples whose labels include want
// (name=value pairs); histograms give their count.
func sample(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	var sum float64
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// A known workload, then /metrics: the counts equal what ran.
func TestMetricsAfterWorkload(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := StartCluster(t, Demo(), Workers(2), WithMetrics(reg))
	srv, err := metrics.Listen(metrics.ServerOptions{Addr: "127.0.0.1:0", Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cnxn := adbcConn(t, s.Addr())

	const queries = 3
	for i := range queries {
		mustQuery(t, cnxn, fmt.Sprintf("SELECT count(*) FROM orders WHERE amount > %d", i))
	}
	_, err = query(t, cnxn, "SELECT * FROM no_such_table")
	wantLimit(t, "missing table", err, codes.NotFound)
	execUpdate(t, cnxn, "CREATE TABLE m (x INTEGER)")
	execUpdate(t, cnxn, "INSERT INTO m VALUES (1), (2), (3)")

	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams = scrape(t, srv.Addr())
		if sample(fams, "icefloe_queries_total", "kind=query", "outcome=finished") == queries || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"icefloe_queries_total", []string{"kind=query", "outcome=finished", "code=OK"}, queries},
		{"icefloe_queries_total", []string{"kind=query", "outcome=failed", "code=NotFound", "strategy=none"}, 1},
		{"icefloe_queries_total", []string{"kind=update", "outcome=finished", "code=OK"}, 2},
		{"icefloe_query_endpoints", nil, queries},
		{"icefloe_query_plan_seconds", nil, queries + 3},
		{"icefloe_query_duration_seconds", []string{"kind=query"}, queries + 1},
		{"icefloe_query_result_rows_total", nil, queries},
		{"icefloe_worker_streamed_rows_total", []string{"kind=endpoint"}, queries},
		{"icefloe_worker_tickets_total", []string{"kind=endpoint", "code=OK"}, 0},
		{"icefloe_rows_written_total", nil, 3},
		{"icefloe_queued_queries", nil, 0},
		{"icefloe_queries_active", nil, 0},
		{"icefloe_workers", []string{"health=live"}, 2},
		{"icefloe_worker_active_streams", nil, 0},
		{"icefloe_commit_conflicts_total", nil, 0},
	} {
		if c.name == "icefloe_worker_tickets_total" {
			// Every endpoint planned was served once.
			c.want = histSum(fams, "icefloe_query_endpoints")
		}
		if got := sample(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := sample(fams, "icefloe_query_result_bytes_total"); got <= 0 || got != sample(fams, "icefloe_worker_streamed_bytes_total", "kind=endpoint") {
		t.Errorf("result bytes %v, endpoint bytes streamed %v", got, sample(fams, "icefloe_worker_streamed_bytes_total", "kind=endpoint"))
	}
	// One INSERT wrote the one data file of m.
	data, _ := liveDataFiles(t, localTable(t, s, "m"))
	if len(data) != 1 || sample(fams, "icefloe_bytes_written_total") != float64(data[0].FileSizeBytes()) {
		t.Errorf("bytes written %v, files of m %d", sample(fams, "icefloe_bytes_written_total"), len(data))
	}
	for _, name := range []string{"icefloe_commit_attempts_total", "icefloe_metadata_cache_misses_total", "icefloe_duckdb_memory_bytes", "icefloe_metadata_cache_bytes", "icefloe_duckdb_memory_limit_bytes",
		"icefloe_coordinator_cache_misses_total", "icefloe_coordinator_cache_bytes", "icefloe_worker_read_files_total", "icefloe_worker_read_bytes_total"} {
		if got := sample(fams, name); got <= 0 {
			t.Errorf("%s = %v, want > 0", name, got)
		}
	}
}

// histSum is the sum of a histogram's observations.
func histSum(fams map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		sum += m.GetHistogram().GetSampleSum()
	}
	return sum
}
