package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/integration/testproc"
)

// procFigures are what a test reads of a running icefloe process: from
// its pprof handlers (ICEFLOE_PPROF) and /proc.
type procFigures struct {
	goroutines int
	heapInuse  int64 // bytes, after a GC
	rss, hwm   int64 // bytes: now and the peak so far
}

func (f procFigures) String() string {
	return fmt.Sprintf("%d goroutines, heap in use %d MB, RSS %d MB (peak %d MB)", f.goroutines, f.heapInuse>>20, f.rss>>20, f.hwm>>20)
}

// readFigures collects the figures, forcing a GC first (heap?gc=1).
func readFigures(t testing.TB, pid int, httpAddr string) procFigures {
	t.Helper()
	get := func(path string) string {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var f procFigures
	heap := get("/debug/pprof/heap?gc=1&debug=1")
	if _, v, ok := strings.Cut(heap, "# HeapInuse = "); ok {
		f.heapInuse, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
	}
	line, _, _ := strings.Cut(get("/debug/pprof/goroutine?debug=1"), "\n")
	if _, err := fmt.Sscanf(line, "goroutine profile: total %d", &f.goroutines); err != nil {
		t.Fatalf("goroutine profile %q: %v", line, err)
	}
	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			f.rss = kb << 10
		case "VmHWM":
			f.hwm = kb << 10
		}
	}
	if f.heapInuse == 0 || f.rss == 0 {
		t.Fatalf("figures of process %d incomplete: %v", pid, f)
	}
	return f
}

// abandoned is a client's result stream it opened and stopped reading.
type abandoned struct {
	stream flight.FlightService_DoGetClient
	close  func()
}

// abandon runs q as a client of its own and opens the DoGet of every
// endpoint without reading any of them (single asks for one endpoint the
// coordinator proxies).
func abandon(t testing.TB, addr, q string, single bool) []abandoned {
	t.Helper()
	// The client's own deadline, far past the server's idle cut, ends
	// the test's reads should the cut not come.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if single {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-icefloe-single-endpoint", "true")
	}
	// Messages up to 16 MiB, as ADBC's drivers take.
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16 << 20))}
	cl, err := flightsql.NewClient(addr, nil, nil, dial...)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cl.Execute(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []abandoned
	for _, ep := range info.Endpoint {
		c := cl.Client
		closeIt := func() {}
		if len(ep.Location) > 0 {
			wc, err := flight.NewClientWithMiddleware(strings.TrimPrefix(ep.Location[0].Uri, "grpc://"), nil, nil, dial...)
			if err != nil {
				t.Fatal(err)
			}
			c, closeIt = wc, func() { wc.Close() }
		}
		stream, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, abandoned{stream: stream, close: closeIt})
	}
	out[len(out)-1].close = func(prev func()) func() { return func() { prev(); cl.Close(); cancel() } }(out[len(out)-1].close)
	return out
}

// stalledReader gives its first batch, then stops until resume closes:
// a client whose upload stalls.
type stalledReader struct {
	array.RecordReader
	resume chan struct{}
	n      int
}

func (r *stalledReader) Next() bool {
	if r.n++; r.n == 2 {
		<-r.resume
	}
	return r.RecordReader.Next()
}

// twoBatches reads two batches of (id BIGINT).
func twoBatches(t testing.TB) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for i := range 2 {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{int64(i), int64(i) + 10}, nil)
		recs = append(recs, b.NewRecordBatch())
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// TestAbandonedStreamsAreCut: 50 clients each run a query over the demo
// orders four times over with 200 bytes of padding (a bare scan streamed straight from the files, a computed one
// through DuckDB, and one through the coordinator's single-endpoint
// proxy), open their result streams and never read them. With
// limits.stream_idle_timeout set short the server cuts every stream: each
// client, reading at last, gets DEADLINE_EXCEEDED naming the limit (or,
// for a stream whose whole rest fitted the transport's window, its end);
// an ingest whose client stops sending is cut as well and creates
// nothing; once they are gone the process's goroutines, heap and RSS are back near
// what they were before.
func TestAbandonedStreamsAreCut(t *testing.T) {
	bin := icefloeBin(t)
	cfg := filepath.Join(t.TempDir(), "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("limits:\n  stream_idle_timeout: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pprof := fmt.Sprintf("127.0.0.1:%d", testproc.FreePort(t))
	s := startProc(t, bin, []string{"ICEFLOE_PPROF=" + pprof}, "serve", "--demo", "--config", cfg,
		"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workers", "2")
	pid := s.cmd.Process.Pid
	// Every result stream is larger than a transport's flow-control
	// window grows to (16 MiB), so its sends block.
	cnxn := adbcConn(t, s.addr())
	execUpdate(t, cnxn, `CREATE TABLE big AS SELECT o.*, repeat('x', 200) AS pad FROM orders o, (VALUES (1), (2), (3), (4)) v(k)`)
	queries := []struct {
		sql    string
		single bool
	}{
		{`SELECT * FROM big`, false},
		{`SELECT *, amount * 2 AS twice FROM big`, false},
		{`SELECT * FROM big`, true},
	}
	// Each query once in full, so that caches are warm at the baseline.
	for _, q := range queries {
		if got := mustQuery(t, cnxn, `SELECT count(*) FROM (`+q.sql+`)`); got.rows[0] != "200000" {
			t.Fatalf("%s: %v rows", q.sql, got.rows)
		}
	}
	base := readFigures(t, pid, pprof)

	const clients = 50
	var streams []abandoned
	for i := range clients {
		q := queries[i%len(queries)]
		streams = append(streams, abandon(t, s.addr(), q.sql, q.single)...)
	}
	opened := readFigures(t, pid, pprof)
	// Every stream the server could not finish is cut two seconds after
	// its send blocked.
	deadline := time.Now().Add(time.Minute)
	for strings.Count(s.log(), "cut an idle stream") < clients {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams cut a minute after %d clients stopped reading", strings.Count(s.log(), "cut an idle stream"), clients)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cutFig := readFigures(t, pid, pprof)
	outcome := map[string]int{}
	for i, a := range streams {
		var err error
		for err == nil {
			_, err = a.stream.Recv()
		}
		switch {
		case err == io.EOF:
			outcome["ended before it was idle"]++
		case status.Code(err) == codes.DeadlineExceeded && strings.Contains(err.Error(), "limits.stream_idle_timeout") &&
			strings.Contains(err.Error(), "the client read nothing"):
			outcome["cut"]++
		default:
			t.Fatalf("stream %d: read %v, want the idle cut's DEADLINE_EXCEEDED naming limits.stream_idle_timeout", i, err)
		}
		a.close()
	}
	if outcome["cut"] < clients {
		t.Fatalf("outcomes %v over %d streams of %d clients: want every client's stream cut", outcome, len(streams), clients)
	}
	// An ingest whose client stops sending after its first batch is cut
	// too, and creates nothing.
	stall := &stalledReader{RecordReader: twoBatches(t), resume: make(chan struct{})}
	ingested := make(chan error, 1)
	go func() {
		cl := flightClient(t, s.addr())
		_, err := cl.ExecuteIngest(context.Background(), stall, &flightsql.ExecuteIngestOpts{Table: "stalled",
			TableDefinitionOptions: &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate}})
		ingested <- err
	}()
	s.waitLog(30*time.Second, "cut an idle stream", "DoPut")
	close(stall.resume)
	if err := <-ingested; status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "limits.stream_idle_timeout") ||
		!strings.Contains(err.Error(), "the client sent nothing") {
		t.Fatalf("the stalled ingest: %v, want the idle cut's DEADLINE_EXCEEDED naming limits.stream_idle_timeout", err)
	}
	var ae adbc.Error
	if _, err := query(t, cnxn, `SELECT count(*) FROM stalled`); !errors.As(err, &ae) || ae.Code != adbc.StatusNotFound {
		t.Fatalf("the cut ingest's table: %v, want it absent", err)
	}

	// Back near the baseline once the clients are gone.
	var after procFigures
	for deadline := time.Now().Add(30 * time.Second); ; {
		after = readFigures(t, pid, pprof)
		settled := after.goroutines <= base.goroutines+16 && after.heapInuse <= base.heapInuse+32<<20 && after.rss <= base.rss+64<<20
		if settled || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%d streams of %d clients: %v\nbaseline: %v\nopened:   %v\ncut:      %v\nafter:    %v", len(streams), clients, outcome, base, opened, cutFig, after)
	if after.goroutines > base.goroutines+16 {
		t.Errorf("goroutines %d after the clients left, baseline %d", after.goroutines, base.goroutines)
	}
	if after.heapInuse > base.heapInuse+32<<20 {
		t.Errorf("heap in use %d MB after the clients left, baseline %d MB", after.heapInuse>>20, base.heapInuse>>20)
	}
	if after.rss > base.rss+64<<20 {
		t.Errorf("RSS %d MB after the clients left, baseline %d MB", after.rss>>20, base.rss>>20)
	}
}
