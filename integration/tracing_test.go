package integration

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// otlpReceiver is an OTLP/gRPC trace collector in the test process: it
// keeps every span it is sent, with its service's name.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []span
}

type span struct {
	service string
	*tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attr(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, span{service: service, Span: s})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			v := kv.GetValue()
			if b, ok := v.GetValue().(*commonpb.AnyValue_BoolValue); ok {
				return fmt.Sprint(b.BoolValue)
			}
			return v.GetStringValue()
		}
	}
	return ""
}

func startReceiver(t testing.TB) (*otlpReceiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, r)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return r, lis.Addr().String()
}

// trace is every span received of trace id.
func (r *otlpReceiver) trace(id string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

// waitFor waits until a received span satisfies ok and returns it.
func (r *otlpReceiver) waitFor(t *testing.T, what string, ok func(span) bool) span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, s := range r.spans {
			if ok(s) {
				r.mu.Unlock()
				return s
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no span %s received within 20s", what)
	return span{}
}

// waitTrace waits until trace id has at least n spans named name.
func (r *otlpReceiver) waitTrace(t *testing.T, id, name string, n int) []span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got []span
		for _, s := range r.trace(id) {
			if s.Name == name {
				got = append(got, s)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d %q spans within 20s, want %d; spans: %s", id, len(got), name, n, names(r.trace(id)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func names(spans []span) string {
	var b []string
	for _, s := range spans {
		b = append(b, s.service+"/"+s.Name)
	}
	return strings.Join(b, ", ")
}

func spanID(s span) string   { return hex.EncodeToString(s.SpanId) }
func parentID(s span) string { return hex.EncodeToString(s.ParentSpanId) }

// waitLogged waits until one of roles logged a line with every part.
func waitLogged(t *testing.T, roles []*role, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range roles {
			for _, line := range strings.Split(r.log(), "\n") {
				if containsAll(line, parts...) {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var logs []string
	for _, r := range roles {
		logs = append(logs, r.log())
	}
	t.Fatalf("no log line with %q within 10s:\n%s", parts, strings.Join(logs, "\n"))
}

var traceSuffix = regexp.MustCompile(`\(trace ([0-9a-f]{32})\)`)

// TestTracingAcrossCoordinatorAndWorkers: a coordinator and two workers
// (real processes) trace to an OTLP receiver in the test. A gather query
// over both workers is one trace: the coordinator's statement with its
// parse, bind and plan, the gathering worker's fragment under it (the
// client's DoGet carried no traceparent: the sealed ticket did), its pulls
// of both workers' child fragments under it, and DuckDB's query; the
// statement's log lines carry the trace id. A write's fragments run under
// the coordinator's pulls and its commit under the statement. A failing query's error names
// its trace, whose spans and log lines say why; a client's own traceparent
// is continued.
func TestTracingAcrossCoordinatorAndWorkers(t *testing.T) {
	recv, endpoint := startReceiver(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	// audit: {} logs every statement and fetch at info, with its trace id.
	if err := os.WriteFile(cfg, []byte("tracing:\n  endpoint: "+endpoint+"\n  insecure: true\naudit: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := icefloeBin(t)
	// The SDK's standard knob: export every 100ms, not every 5s.
	env := []string{membershipKey, "OTEL_BSP_SCHEDULE_DELAY=100"}
	w1 := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--config", cfg)
	w2 := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--config", cfg)
	c := startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--config", cfg,
		"--worker", w1.field("worker"), "--worker", w2.field("worker"))
	cnxn := adbcConn(t, c.addr())
	g := &tracingCluster{recv: recv, cnxn: cnxn, w1: w1, w2: w2, c: c}
	// Files go to workers by rendezvous hashing: 16 of them leave each
	// worker some (4 left all to one in one run of eight).
	seedTableFiles(t, cnxn, "t", 4000, 250)
	waitPlanned(t, c.addr(), `SELECT * FROM t`, 10*time.Second, w1.field("worker"), w2.field("worker"))

	// A window over the whole table gathers: one worker pulls every
	// group's child fragment from both workers.
	got := mustQuery(t, cnxn, `SELECT count(*), max(rn) FROM (SELECT row_number() OVER (ORDER BY id) AS rn FROM t)`)
	if want := "4000 | 4000"; len(got.rows) != 1 || got.rows[0] != want {
		t.Fatalf("gather answered %v, want %s", got.rows, want)
	}
	plan := recv.waitFor(t, "plan with strategy gather", func(s span) bool {
		return s.Name == "plan" && attr(s.Attributes, "icefloe.strategy") == "gather"
	})
	id := hex.EncodeToString(plan.TraceId)
	stmt := recv.waitTrace(t, id, "statement", 1)
	if len(stmt) != 1 || stmt[0].service != "icefloe-coordinator" || len(stmt[0].ParentSpanId) != 0 {
		t.Fatalf("want one root statement span of the coordinator, got %s", names(stmt))
	}
	root := spanID(stmt[0])
	for _, name := range []string{"parse", "bind", "plan"} {
		s := recv.waitTrace(t, id, name, 1)
		if parentID(s[0]) != root || s[0].service != "icefloe-coordinator" {
			t.Errorf("%s span: parent %s on %s, want the statement %s on the coordinator", name, parentID(s[0]), s[0].service, root)
		}
	}
	// The gathering fragment ends last of its worker's spans.
	gather := recv.waitFor(t, "gathering fragment", func(s span) bool {
		return hex.EncodeToString(s.TraceId) == id && s.Name == "fragment" && attr(s.Attributes, "icefloe.child") == "false"
	})
	if parentID(gather) != root {
		t.Fatalf("want the gathering fragment a child of the statement %s; spans: %s", root, names(recv.trace(id)))
	}
	checkGatherPulls(t, g, id, gather)
	// The audit lines (their entry is quoted JSON) of the statement, of
	// the gathering fragment and of a child on each worker.
	c.waitLog(10*time.Second, "audit", "statement", id)
	w1.waitLog(10*time.Second, "audit", "fetch", id)
	w2.waitLog(10*time.Second, "audit", "fetch", id)

	checkWriteTrace(t, g)

	t.Run("error names the trace", func(t *testing.T) { tracingErrorNamesTrace(t, g) })

	t.Run("client traceparent", func(t *testing.T) { tracingClientTraceparent(t, g) })
}

// checkGatherPulls: the gathering fragment of the trace id pulls from
// both workers, each pull the parent of one child fragment, and runs
// DuckDB under it.
func checkGatherPulls(t *testing.T, g *tracingCluster, id string, gather span) {
	t.Helper()
	recv, w1, w2 := g.recv, g.w1, g.w2
	// The pulls run under the gathering fragment's inputs span.
	inputs := recv.waitFor(t, "the gathering fragment's inputs", func(s span) bool {
		return hex.EncodeToString(s.TraceId) == id && s.Name == "inputs" && parentID(s) == spanID(gather)
	})
	pulls := recv.waitTrace(t, id, "pull", 2)
	peers := map[string]bool{}
	pullIDs := map[string]bool{}
	for _, p := range pulls {
		if parentID(p) != spanID(inputs) {
			t.Errorf("pull of %s: parent %s, want the gathering fragment's inputs %s", attr(p.Attributes, "icefloe.peer"), parentID(p), spanID(inputs))
		}
		peers[attr(p.Attributes, "icefloe.peer")] = true
		pullIDs[spanID(p)] = true
	}
	if !peers[w1.field("worker")] || !peers[w2.field("worker")] {
		t.Errorf("pulls from %v, want both workers %s and %s", peers, w1.field("worker"), w2.field("worker"))
	}
	children := 0
	frags := recv.waitTrace(t, id, "fragment", 1+len(pulls))
	for _, f := range frags {
		if f.service != "icefloe-worker" {
			t.Errorf("fragment span of %s", f.service)
		}
		if attr(f.Attributes, "icefloe.child") == "true" {
			children++
			if !pullIDs[parentID(f)] {
				t.Errorf("child fragment's parent %s is not a pull span", parentID(f))
			}
		}
	}
	if children < 2 || children != len(pulls) {
		t.Errorf("%d child fragments for %d pulls, want one per pull and at least 2", children, len(pulls))
	}
	var duck bool
	for _, s := range recv.waitTrace(t, id, "duckdb", 1) {
		duck = duck || parentID(s) == spanID(gather)
	}
	if !duck {
		t.Errorf("no duckdb span under the gathering fragment")
	}
}

// checkWriteTrace: a write's fragments run under the coordinator's pulls,
// then the statement commits once.
func checkWriteTrace(t *testing.T, g *tracingCluster) {
	t.Helper()
	recv, cnxn := g.recv, g.cnxn
	execUpdate(t, cnxn, `INSERT INTO t SELECT id + 4000, g FROM t WHERE id < 100`)
	wf := recv.waitFor(t, "write fragment", func(s span) bool {
		return s.Name == "fragment" && attr(s.Attributes, "icefloe.write") == "true"
	})
	wid := hex.EncodeToString(wf.TraceId)
	wstmt := recv.waitTrace(t, wid, "statement", 1)[0]
	if commit := recv.waitTrace(t, wid, "commit", 1); len(commit) != 1 || parentID(commit[0]) != spanID(wstmt) {
		t.Errorf("want one commit span under the statement; spans: %s", names(recv.trace(wid)))
	}
	pulled := false
	for _, p := range recv.trace(wid) {
		pulled = pulled || (spanID(p) == parentID(wf) && p.Name == "pull" && p.service == "icefloe-coordinator" && parentID(p) == spanID(wstmt))
	}
	if !pulled {
		t.Errorf("write fragment's parent is not a coordinator pull under the statement; spans: %s", names(recv.trace(wid)))
	}
}

// tracingCluster is what TestTracingAcrossCoordinatorAndWorkers's parts
// share: the span receiver, a client connection, the two workers and the
// coordinator.
type tracingCluster struct {
	recv      *otlpReceiver
	cnxn      adbc.Connection
	w1, w2, c *role
}

// tracingErrorNamesTrace is the "error names the trace" part of TestTracingAcrossCoordinatorAndWorkers.
func tracingErrorNamesTrace(t *testing.T, g *tracingCluster) {
	recv, cnxn, w1, w2, c := g.recv, g.cnxn, g.w1, g.w2, g.c
	// Fails on the workers, at run time: the coordinator binds it.
	_, err := query(t, cnxn, `SELECT CAST(CAST(id AS VARCHAR) || 'x' AS INTEGER) FROM t`)
	if err == nil {
		t.Fatal("query of a bad cast succeeded")
	}
	m := traceSuffix.FindStringSubmatch(err.Error())
	if m == nil || !strings.Contains(err.Error(), "Could not convert string") {
		t.Fatalf("error %q: want DuckDB's message and (trace <id>)", err)
	}
	recv.waitFor(t, "fragment failed with the conversion error", func(s span) bool {
		return hex.EncodeToString(s.TraceId) == m[1] && s.Name == "fragment" &&
			s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR && strings.Contains(s.Status.GetMessage(), "Could not convert string")
	})
	recv.waitTrace(t, m[1], "statement", 1)
	waitLogged(t, []*role{w1, w2}, "worker: fragment failed", `"trace_id": "`+m[1]+`"`, "Could not convert string")

	// Failing on the coordinator: the statement's span and log line.
	_, err = query(t, cnxn, `SELECT * FROM no_such_table`)
	m = traceSuffix.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("error %v: want (trace <id>)", err)
	}
	waitLogged(t, []*role{c}, "statement failed", `"trace_id": "`+m[1]+`"`, "NotFound")
	s := recv.waitTrace(t, m[1], "statement", 1)
	if s[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed statement's span status %v", s[0].Status)
	}
}

// tracingClientTraceparent is the "client traceparent" part of TestTracingAcrossCoordinatorAndWorkers.
func tracingClientTraceparent(t *testing.T, g *tracingCluster) {
	recv, c := g.recv, g.c
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cn := adbcConn(t, c.addr(), map[string]string{
		"adbc.flight.sql.rpc.call_header.traceparent": "00-" + traceID + "-" + parent + "-01",
	})
	// A filter on a column the manifests cannot count by: the workers read.
	mustQuery(t, cn, `SELECT count(*) FROM t WHERE id >= 0`)
	s := recv.waitTrace(t, traceID, "statement", 1)
	if parentID(s[0]) != parent {
		t.Errorf("statement's parent %s, want the client's span %s", parentID(s[0]), parent)
	}
	recv.waitTrace(t, traceID, "fragment", 2)
}

// BenchmarkTracingOverhead runs SELECT 1 and a small distributed query on
// `icefloe serve --workers 2` without tracing and with every statement
// traced to an OTLP receiver in the test, interleaved in one run, and
// reports each one's p50 and the ratios to the untraced p50;
// ICEFLOE_BIN_BASE names another build (e.g. one without tracing) to run
// untraced alongside (base). Compare the ratios, never a time.
func BenchmarkTracingOverhead(b *testing.B) {
	_, endpoint := startReceiver(b)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "tracing.yaml")
	if err := os.WriteFile(cfg, []byte("tracing:\n  endpoint: "+endpoint+"\n  insecure: true\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	type setup struct {
		name string
		bin  string
		args []string
		cnxn adbc.Connection
		took []time.Duration
	}
	setups := []*setup{{name: "off", bin: icefloeBin(b)}, {name: "on", bin: icefloeBin(b), args: []string{"--config", cfg}}}
	if base := os.Getenv("ICEFLOE_BIN_BASE"); base != "" {
		setups = append(setups, &setup{name: "base", bin: base})
	}
	for i, s := range setups {
		args := append([]string{"serve", "--demo", "--workers", "2", "--listen", "127.0.0.1:0",
			"--data-dir", filepath.Join(dir, fmt.Sprint(i))}, s.args...)
		s.cnxn = adbcConn(b, startProc(b, s.bin, nil, args...).addr())
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	for _, q := range []struct{ name, sql string }{
		{"select1", "SELECT 1"},
		{"distributed", "SELECT status, count(*) FROM orders WHERE id < 5000 GROUP BY status"},
	} {
		b.Run(q.name, func(b *testing.B) {
			for _, s := range setups {
				s.took = s.took[:0]
			}
			for i := 0; i < b.N; i++ {
				for _, s := range setups {
					start := time.Now()
					mustQuery(b, s.cnxn, q.sql)
					s.took = append(s.took, time.Since(start))
				}
			}
			off := p50(setups[0].took)
			b.ReportMetric(off, "off-p50-us")
			for _, s := range setups[1:] {
				b.ReportMetric(p50(s.took), s.name+"-p50-us")
				b.ReportMetric(p50(s.took)/off, s.name+"/off")
			}
		})
	}
}
