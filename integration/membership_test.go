package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/internal/readyline"
)

// role is an icefloe process of a membership test, stopped by PID.
type role struct {
	t      testing.TB
	cmd    *exec.Cmd
	fields map[string]any
	mu     sync.Mutex
	logs   strings.Builder
	exited chan error
}

// startProc starts `icefloe args…` with env added and waits for its ready
// line; the test's end kills it if it still runs.
func startProc(t testing.TB, bin string, env []string, args ...string) *role {
	t.Helper()
	r, ready := spawn(t, bin, env, args...)
	select {
	case r.fields = <-ready:
	case err := <-r.exited:
		t.Fatalf("%v exited before it was ready (%v):\n%s", args, err, r.log())
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v not ready after 2 minutes:\n%s", args, r.log())
	}
	return r
}

// spawn starts `icefloe args…` with env added; its ready line's fields
// arrive on ready, its end on r.exited. The test's end kills it if it
// still runs.
func spawn(t testing.TB, bin string, env []string, args ...string) (r *role, ready <-chan map[string]any) {
	t.Helper()
	args = withoutResultCache(t, args)
	r = &role{t: t, cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	r.cmd.Env = append(os.Environ(), env...)
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyc := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.logs.WriteString(line + "\n")
			r.mu.Unlock()
			if f := readyline.Fields(line); f != nil {
				readyc <- f
			}
		}
		r.exited <- r.cmd.Wait()
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
		}
	})
	return r, readyc
}

func (r *role) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

func (r *role) field(name string) string { s, _ := r.fields[name].(string); return s }

// addr is a coordinator's host:port.
func (r *role) addr() string { return strings.TrimPrefix(r.field("coordinator"), "grpc://") }

func (r *role) signal(sig syscall.Signal) {
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
}

// waitExit waits for the process to end and returns its error.
func (r *role) waitExit(within time.Duration) error {
	select {
	case err := <-r.exited:
		return err
	case <-time.After(within):
		r.t.Fatalf("process did not exit within %s:\n%s", within, r.log())
		return nil
	}
}

// waitLog waits until the process logged a line containing every part.
func (r *role) waitLog(within time.Duration, parts ...string) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(r.log(), "\n") {
			if containsAll(line, parts...) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("no log line with %q within %s:\n%s", parts, within, r.log())
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// planned returns the worker locations a coordinator plans q onto.
func planned(t testing.TB, addr, q string) (map[string]bool, error) {
	t.Helper()
	info, err := flightClient(t, addr).Execute(context.Background(), q)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ep := range info.Endpoint {
		for _, l := range ep.Location {
			out[l.Uri] = true
		}
	}
	return out, nil
}

// waitPlanned waits until q plans, onto exactly the locations want, and
// returns how long that took.
func waitPlanned(t testing.TB, addr, q string, within time.Duration, want ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, err := planned(t, addr, q)
		ok := err == nil && len(got) == len(want)
		for _, w := range want {
			ok = ok && got[w]
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s is planned on %v (%v), want %v after %s", q, got, err, want, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const membershipKey = "ICEFLOE_TICKET_KEY=membership-test-key"

// seedTable makes t(id, g) with rows ids 0..n-1 in files of 1000 rows, so
// scans have groups for every worker.
func seedTable(t testing.TB, cnxn adbc.Connection, name string, n int) {
	t.Helper()
	seedTableFiles(t, cnxn, name, n, 1000)
}

// seedTableFiles is seedTable with perFile rows in each file.
func seedTableFiles(t testing.TB, cnxn adbc.Connection, name string, n, perFile int) {
	t.Helper()
	execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s (id BIGINT, g BIGINT)`, name))
	for start := 0; start < n; start += perFile {
		var b strings.Builder
		for i := start; i < start+perFile && i < n; i++ {
			if i > start {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, %d)", i, i%97)
		}
		execUpdate(t, cnxn, fmt.Sprintf(`INSERT INTO %s VALUES %s`, name, b.String()))
	}
}

// TestWorkersJoinAndLeaveUnderLoad: while clients query without pause, a
// second worker announces itself and joins the plans, then the first gets
// SIGTERM, leaves the plans before it stops, and exits; no query fails
// or answers wrong.
func TestWorkersJoinAndLeaveUnderLoad(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	c := startProc(t, bin, []string{membershipKey}, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir)
	w1 := startProc(t, bin, []string{membershipKey}, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--announce", c.addr())
	const scan = `SELECT * FROM t`
	// A table function runs on a worker (SELECT 1 is answered by the
	// coordinator itself).
	waitPlanned(t, c.addr(), `SELECT * FROM range(1)`, 10*time.Second, w1.field("worker"))
	cnxn := adbcConn(t, c.addr())
	seedTable(t, cnxn, "t", 8000)
	waitPlanned(t, c.addr(), scan, 10*time.Second, w1.field("worker"))

	var queries, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := adbcConn(t, c.addr())
			for {
				select {
				case <-stop:
					return
				default:
				}
				for q, want := range map[string]string{
					`SELECT count(*), sum(id) FROM t`:      "8000 | 31996000",
					`SELECT count(*) FROM t WHERE g = 5`:   "83",
					`SELECT g, count(*) FROM t GROUP BY g`: "97 groups",
					`SELECT id FROM t WHERE id % 1000 = 7`: "8 rows",
				} {
					got, err := query(t, cl, q)
					queries.Add(1)
					if err == nil {
						err = checkLoadAnswer(got, want)
					}
					if err != nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %v", q, err))
					}
				}
			}
		}()
	}
	time.Sleep(time.Second)
	w2 := startProc(t, bin, []string{membershipKey}, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--announce", c.addr())
	waitPlanned(t, c.addr(), scan, 10*time.Second, w1.field("worker"), w2.field("worker"))
	time.Sleep(time.Second)
	w1.signal(syscall.SIGTERM)
	waitPlanned(t, c.addr(), scan, 2*time.Second, w2.field("worker"))
	if err := w1.waitExit(30 * time.Second); err != nil {
		t.Fatalf("worker 1 exited with %v:\n%s", err, w1.log())
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	c.waitLog(time.Second, "worker left planning", w1.field("worker"), "draining")
	if queries.Load() < 20 || failures.Load() > 0 {
		t.Fatalf("%d queries, %d failed; first: %v\ncoordinator:\n%s\nworker 1:\n%s", queries.Load(), failures.Load(), firstErr.Load(), c.log(), w1.log())
	}
	t.Logf("%d queries under load, none failed", queries.Load())
}

func checkLoadAnswer(got result, want string) error {
	switch {
	case strings.HasSuffix(want, " groups"), strings.HasSuffix(want, " rows"):
		var n int
		fmt.Sscanf(want, "%d", &n)
		if len(got.rows) != n {
			return fmt.Errorf("%d rows, want %d", len(got.rows), n)
		}
	case len(got.rows) != 1 || got.rows[0] != want:
		return fmt.Errorf("got %v, want %s", got.rows, want)
	}
	return nil
}

// TestTwoCoordinatorsShareWorkers: two coordinators plan over the same two
// workers, one of which it finds by DNS and the other by announcement; a
// worker with another ticket key is refused by both, with a log line on
// every side; draining one coordinator leaves the other answering.
func TestTwoCoordinatorsShareWorkers(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	env := []string{membershipKey}
	c1 := startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir)
	w1 := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--announce", c1.addr())
	_, port, _ := strings.Cut(strings.TrimPrefix(w1.field("worker"), "grpc://127.0.0.1"), ":")
	c2 := startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker-dns", "localhost:"+port)
	w2 := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--announce", c1.addr(), "--announce", c2.addr())
	bad := startProc(t, bin, []string{"ICEFLOE_TICKET_KEY=another key"}, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir,
		"--announce", c1.addr(), "--announce", c2.addr())

	cnxn1 := adbcConn(t, c1.addr())
	seedTable(t, cnxn1, "t", 4000)
	const scan = `SELECT * FROM t`
	for _, c := range []*role{c1, c2} {
		waitPlanned(t, c.addr(), scan, 10*time.Second, w1.field("worker"), w2.field("worker"))
		wantRows(t, adbcConn(t, c.addr()), `SELECT count(*), sum(id) FROM t`, "4000 | 7998000")
		c.waitLog(5*time.Second, "refused a worker's announcement", "ticket key differs")
	}
	bad.waitLog(5*time.Second, "coordinator refused this worker", "ticket key differs", c1.addr())
	bad.waitLog(5*time.Second, "coordinator refused this worker", "ticket key differs", c2.addr())
	// A listed worker with another key is refused at its key check.
	c3 := startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker", bad.field("worker"))
	c3.waitLog(5*time.Second, "refused worker", "ticket key differs", bad.field("worker"))
	bad.waitLog(5*time.Second, "refused a coordinator's key check", "ticket key differs")
	if _, err := planned(t, c3.addr(), scan); err == nil || !strings.Contains(err.Error(), "no live worker") {
		t.Fatalf("a coordinator whose only worker was refused planned a scan: %v", err)
	}
	if strings.Contains(c1.log()+c2.log()+c3.log()+bad.log(), "another key") || strings.Contains(c1.log()+c3.log(), "membership-test-key") {
		t.Fatal("a ticket key reached a log")
	}

	c1.signal(syscall.SIGTERM)
	c1.waitLog(5*time.Second, "draining")
	_, err := query(t, cnxn1, `SELECT count(*) FROM t`)
	if err == nil || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("a new query on the draining coordinator: %v", err)
	}
	if err := c1.waitExit(30 * time.Second); err != nil {
		t.Fatalf("coordinator 1 exited with %v", err)
	}
	wantRows(t, adbcConn(t, c2.addr()), `SELECT count(*), sum(id) FROM t`, "4000 | 7998000")
}

// listedWorkers starts two workers and a coordinator that lists them,
// seeds t with n rows and waits until scans plan on both workers.
func listedWorkers(t *testing.T, n int) (w1, w2, c *role, cnxn adbc.Connection) {
	t.Helper()
	_, w1, w2, c, cnxn = listedWorkersIn(t, n)
	return w1, w2, c, cnxn
}

// listedWorkersIn is listedWorkers that also returns the processes' data
// folder, for more processes to share.
func listedWorkersIn(t *testing.T, n int) (dir string, w1, w2, c *role, cnxn adbc.Connection) {
	t.Helper()
	bin := icefloeBin(t)
	dir = t.TempDir()
	env := []string{membershipKey}
	w1 = startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	w2 = startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	c = startProc(t, bin, env, "coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir,
		"--worker", w1.field("worker"), "--worker", w2.field("worker"))
	cnxn = adbcConn(t, c.addr())
	seedTable(t, cnxn, "t", n)
	waitPlanned(t, c.addr(), `SELECT * FROM t`, 10*time.Second, w1.field("worker"), w2.field("worker"))
	return dir, w1, w2, c, cnxn
}

// TestDeadWorkerLeavesPlanning: a worker killed with SIGKILL is out of the
// next plans within a second, and queries planned onto it before still
// answer in full through the fallback location: in the single-endpoint
// proxy, which retries a stream that failed before its first batch, and
// in ADBC, which tries an endpoint's next location when DoGet fails (the
// JDBC driver does the same), with a gather whose worker re-pulls its
// children elsewhere.
func TestDeadWorkerLeavesPlanning(t *testing.T) {
	w1, w2, c, cnxn := listedWorkers(t, 4000)
	const scan = `SELECT * FROM t`
	cl := flightClient(t, c.addr())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-icefloe-single-endpoint", "true")
	info, err := cl.Execute(ctx, `SELECT count(*) FROM t WHERE g < 50`)
	if err != nil {
		t.Fatal(err)
	}

	direct := map[string]adbc.Partitions{}
	planFirst := map[string]bool{}
	for _, q := range []string{`SELECT id FROM t WHERE id % 1000 = 7`, `SELECT count(*), sum(id) FROM t`} {
		parts, eps := partitions(t, cnxn, q)
		direct[q] = parts
		for _, ep := range eps {
			if len(ep.Location) != 2 {
				t.Fatalf("%s: endpoint locations %v, want an owner and a fallback", q, ep.Location)
			}
			planFirst[ep.Location[0].Uri] = true
		}
	}
	if !planFirst[w2.field("worker")] {
		t.Fatalf("no endpoint planned first on the worker to be killed: %v", planFirst)
	}

	w2.cmd.Process.Kill()
	took := waitPlanned(t, c.addr(), scan, 5*time.Second, w1.field("worker"))
	t.Logf("killed worker left planning after %s", took)
	if took > time.Second {
		t.Errorf("a killed worker left planning after %s, want within a second", took)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("query planned before the kill: %v", err)
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, rowsOf(rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil || len(rows) != 1 || rows[0] != "2073" {
		t.Fatalf("query planned before the kill: %v, %v", rows, err)
	}
	for q, want := range map[string][]string{
		`SELECT id FROM t WHERE id % 1000 = 7`: {"1007", "2007", "3007", "7"},
		`SELECT count(*), sum(id) FROM t`:      {"4000 | 7998000"},
	} {
		var got []string
		for _, p := range direct[q].PartitionIDs {
			rdr, err := cnxn.ReadPartition(context.Background(), p)
			if err != nil {
				t.Fatalf("%s planned before the kill, read partition: %v", q, err)
			}
			got = append(got, collect(t, rdr).rows...)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s planned before the kill: got %q, want %q", q, got, want)
		}
	}
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "4000 | 7998000")
}

// TestCoordinatorDrainOnSIGTERM: after SIGTERM a coordinator refuses new
// statements with UNAVAILABLE saying it drains, lets the statements in
// flight finish (a proxied query, and an INSERT through a prepared
// statement whose follow-up calls all succeed), ends one still running at
// the grace period with UNAVAILABLE, and exits; the INSERT is committed.
func TestCoordinatorDrainOnSIGTERM(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	env := []string{membershipKey}
	w := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	cargs := []string{"coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker", w.field("worker"), "--drain-timeout", "8s"}
	c := startProc(t, bin, env, cargs...)
	cnxn := adbcConn(t, c.addr())
	seedTable(t, cnxn, "t", 10000)
	execUpdate(t, cnxn, `CREATE TABLE counts (n BIGINT)`)
	const slow = `SELECT count(*) FROM t a, t b WHERE a.id < 3000 AND a.g + b.g < 60`
	want := mustQuery(t, cnxn, slow).rows[0]

	var wg sync.WaitGroup
	results := make([]string, 3)
	run := func(i int, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				results[i] = err.Error()
			} else {
				results[i] = "ok"
			}
		}()
	}
	single := metadata.AppendToOutgoingContext(context.Background(), "x-icefloe-single-endpoint", "true")
	cl := flightClient(t, c.addr())
	proxied := func(q string, want string) func() error {
		return func() error {
			info, err := cl.Execute(single, q)
			if err != nil {
				return err
			}
			rdr, err := cl.DoGet(single, info.Endpoint[0].Ticket)
			if err != nil {
				return err
			}
			defer rdr.Release()
			var rows []string
			for rdr.Next() {
				rows = append(rows, rowsOf(rdr.RecordBatch())...)
			}
			if err := rdr.Err(); err != nil {
				return err
			}
			if len(rows) != 1 || rows[0] != want {
				return fmt.Errorf("got %v, want %s", rows, want)
			}
			return nil
		}
	}
	run(0, proxied(slow, want))
	run(1, func() error {
		// What DB-API's cursor.execute does: prepare, execute through
		// GetFlightInfo, read the count's endpoint, close.
		return runADBC(adbcConn(t, c.addr()), `INSERT INTO counts `+slow, false, true)
	})
	run(2, proxied(`SELECT count(*) FROM t a, t b, t c WHERE a.g + b.g + c.g < 0`, "0"))
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	c.signal(syscall.SIGTERM)
	c.waitLog(5*time.Second, "draining")
	_, err := cl.Execute(context.Background(), `SELECT 1`)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("a new statement while draining: %v", err)
	}
	wg.Wait()
	if results[0] != "ok" || results[1] != "ok" {
		t.Fatalf("statements in flight at SIGTERM: query %q, insert %q\n%s", results[0], results[1], c.log())
	}
	if !strings.Contains(results[2], "Unavailable") || !strings.Contains(results[2], "grace period") {
		t.Fatalf("a statement past the grace period: %q", results[2])
	}
	if err := c.waitExit(30 * time.Second); err != nil {
		t.Fatalf("coordinator exited with %v:\n%s", err, c.log())
	}
	t.Logf("drained and exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	c2 := startProc(t, bin, env, cargs...)
	wantRows(t, adbcConn(t, c2.addr()), `SELECT n FROM counts`, want)
}

// TestListedWorkerDrainOnSIGTERM: a worker the coordinator was given with
// --worker (it does not announce) that gets SIGTERM turns NOT_SERVING and
// leaves planning within a second, while it still serves what was planned
// on it: a query running over both workers answers in full, and the
// endpoints of a scan planned before the SIGTERM are read at their first
// location, the draining worker included, with no fallback. Then it exits.
func TestListedWorkerDrainOnSIGTERM(t *testing.T) {
	w1, w2, c, cnxn := listedWorkers(t, 10000)
	const scan = `SELECT * FROM t`
	const slow = `SELECT count(*) FROM t a, t b WHERE a.g + b.g < 60`
	want := mustQuery(t, cnxn, slow).rows[0]
	info, err := flightClient(t, c.addr()).Execute(context.Background(), `SELECT id FROM t WHERE id % 1000 = 7`)
	if err != nil {
		t.Fatal(err)
	}

	answer := make(chan error, 1)
	go func() {
		got, err := query(t, adbcConn(t, c.addr()), slow)
		if err == nil && (len(got.rows) != 1 || got.rows[0] != want) {
			err = fmt.Errorf("got %v, want %s", got.rows, want)
		}
		answer <- err
	}()
	time.Sleep(100 * time.Millisecond)
	w2.signal(syscall.SIGTERM)
	sigterm := time.Now()
	w2.waitLog(5*time.Second, "draining")
	var ids []string
	onDraining := 0
	for _, ep := range info.Endpoint {
		loc := ep.Location[0].Uri
		if loc == w2.field("worker") {
			onDraining++
		}
		rdr, err := flightClient(t, strings.TrimPrefix(loc, "grpc://")).DoGet(context.Background(), ep.Ticket)
		if err != nil {
			t.Fatalf("DoGet at %s after the SIGTERM: %v", loc, err)
		}
		for rdr.Next() {
			ids = append(ids, rowsOf(rdr.RecordBatch())...)
		}
		if err := rdr.Err(); err != nil {
			t.Fatalf("read at %s after the SIGTERM: %v", loc, err)
		}
		rdr.Release()
	}
	if onDraining == 0 || len(ids) != 10 {
		t.Fatalf("scan planned before the SIGTERM: %d endpoints on the draining worker, ids %v; want some, and 10 ids", onDraining, ids)
	}
	waitPlanned(t, c.addr(), scan, 5*time.Second, w1.field("worker"))
	took := time.Since(sigterm)
	t.Logf("draining worker left planning %s after its SIGTERM", took)
	if took > time.Second {
		t.Errorf("a draining worker left planning after %s, want within a second", took)
	}
	if err := <-answer; err != nil {
		t.Fatalf("the query running over the draining worker: %v\nworker:\n%s", err, w2.log())
	}
	if err := w2.waitExit(30 * time.Second); err != nil {
		t.Fatalf("the drained worker exited with %v:\n%s", err, w2.log())
	}
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "10000 | 49995000")
}

// withoutResultCache turns the result cache of a coordinator (or serve)
// the tests start off, unless its config sets result_cache_bytes: a
// cacheable one-endpoint query would be read through the coordinator,
// and these tests are about what the workers serve. The result cache's
// own tests run in-process (ResultCache) and through the Python and JDBC
// suites.
func withoutResultCache(t testing.TB, args []string) []string {
	if len(args) == 0 || (args[0] != "coordinator" && args[0] != "serve") {
		return args
	}
	for i, a := range args {
		if a != "--config" || i+1 >= len(args) {
			continue
		}
		text, err := os.ReadFile(args[i+1])
		if err != nil || strings.Contains(string(text), "result_cache_bytes") {
			return args
		}
		if len(text) > 0 && text[len(text)-1] != '\n' {
			text = append(text, '\n')
		}
		if err := os.WriteFile(args[i+1], append(text, "result_cache_bytes: 0\n"...), 0o600); err != nil {
			t.Fatal(err)
		}
		return args
	}
	cfg := filepath.Join(t.TempDir(), "no-result-cache.yaml")
	if err := os.WriteFile(cfg, []byte("result_cache_bytes: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(slices.Clone(args), "--config", cfg)
}
