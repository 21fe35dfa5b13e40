package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/membudget"
)

// The memory budget of TestMemoryBudget's server, and the overhead
// docs/operations.md ("Memory") allows above it: the binary, DuckDB's
// code and the Go runtime's base (about 180 MiB at rest, measured).
const (
	testBudget      = 1 << 30
	testRSSOverhead = 256 << 20
)

// queryIDRe matches the query id a resource error names.
var queryIDRe = regexp.MustCompile(`query [0-9a-f]{16}`)

// TestMemoryBudget runs `icefloe serve` with a 1 GiB budget and 128 MiB
// of spill disk and sends it the statements that once took a server far
// past its memory: each fails with RESOURCE_EXHAUSTED naming the limit's
// config key and the query id, the process's peak RSS stays under the
// budget plus the documented overhead, and another client's small query
// keeps answering correctly meanwhile. A client that stops reading a
// cross join's stream costs bounded memory too.
func TestMemoryBudget(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("limits:\n  memory_budget: 1GiB\n  max_temp_directory_size: 128MiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startProc(t, bin, nil, "serve", "--demo", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0")
	coord, _ := r.fields["coordinator"].(string)
	addr := strings.TrimPrefix(coord, "grpc://")
	pid := r.cmd.Process.Pid
	small, big := adbcConn(t, addr), adbcConn(t, addr)
	t.Logf("RSS at rest: %d MiB", procStatus(t, pid, "VmRSS")>>20)

	inList := func(n int) string {
		var b strings.Builder
		b.WriteString("SELECT count(*) AS n FROM orders WHERE customer_id IN (0")
		for i := 1; i < n; i++ {
			b.WriteString("," + strconv.Itoa(i))
		}
		return b.String() + ")"
	}
	if err := runADBC(big, "CREATE TABLE big_values (s VARCHAR)", true, false); err != nil {
		t.Fatal(err)
	}
	if err := runADBC(big, "INSERT INTO big_values VALUES ('x')", true, false); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, sql, key string
		update         bool
	}{
		// A hash aggregate over the 2.5·10⁹ rows of the cross product:
		// DuckDB spills until the spill limit.
		{"cross join aggregate", "SELECT a.customer_id * 1000003 + b.amount AS k, count(*) AS n FROM orders a, orders b GROUP BY k ORDER BY n DESC LIMIT 3", "limits.max_temp_directory_size", false},
		// A 3 GB string, which DuckDB builds outside its memory_limit.
		{"huge repeat", "SELECT length(repeat('x', 3000000000)) AS n", "limits.max_value_bytes", false},
		{"huge repeat inserted", "INSERT INTO big_values VALUES (repeat('x', 3000000000))", "limits.max_value_bytes", true},
		// Write fragments run on the workers: their resource error stays
		// RESOURCE_EXHAUSTED through the coordinator.
		{"huge repeat in INSERT … SELECT", "INSERT INTO big_values SELECT repeat('x', 3000000000)", "limits.max_value_bytes", true},
		{"huge repeat in UPDATE", "UPDATE big_values SET s = repeat(s, 3000000000)", "limits.max_value_bytes", true},
		{"huge IN list", inList(200000), "limits.max_statement_bytes", false},
		// Under the statement limit, its syntax tree does not fit the
		// planner's share of the budget.
		{"IN list under the text limit", inList(100000), "limits.memory_budget", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stop := smallQueries(t, small)
			err := runADBC(big, c.sql, c.update, false)
			answered := stop()
			wantLimit(t, c.name, err, codes.ResourceExhausted, "(limit key "+c.key+")")
			if !queryIDRe.MatchString(err.Error()) {
				t.Fatalf("%s: %q does not name the query id", c.name, err)
			}
			if answered == 0 {
				t.Fatalf("%s: no small query answered while it ran", c.name)
			}
			wantPeak(t, pid, c.name)
		})
	}
	t.Run("50 abandoned streams", func(t *testing.T) {
		// Each reads one batch of a scan streamed straight from the
		// table, then nothing more.
		var readers []array.RecordReader
		defer func() {
			for _, r := range readers {
				r.Release()
			}
		}()
		stop := smallQueries(t, small)
		for range 50 {
			stmt, err := big.NewStatement()
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			if err := stmt.SetSqlQuery("SELECT * FROM orders"); err != nil {
				t.Fatal(err)
			}
			rdr, _, err := stmt.ExecuteQuery(context.Background())
			if err != nil {
				wantLimit(t, "an abandoned stream", err, codes.ResourceExhausted, "limit key limits.")
				continue
			}
			readers = append(readers, rdr)
			if !rdr.Next() && rdr.Err() != nil {
				wantLimit(t, "an abandoned stream", rdr.Err(), codes.ResourceExhausted, "limit key limits.")
			}
		}
		time.Sleep(2 * time.Second)
		if stop() == 0 {
			t.Fatal("no small query answered while 50 streams stalled")
		}
		t.Logf("RSS with 50 streams stalled: %d MiB", procStatus(t, pid, "VmRSS")>>20)
		wantPeak(t, pid, "50 abandoned streams")
	})
	t.Run("stalled cross join stream", func(t *testing.T) {
		stmt, err := big.NewStatement()
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		if err := stmt.SetSqlQuery("SELECT a.*, b.* FROM orders a, orders b"); err != nil {
			t.Fatal(err)
		}
		rdr, _, err := stmt.ExecuteQuery(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !rdr.Next() {
			t.Fatalf("no first batch: %v", rdr.Err())
		}
		stop := smallQueries(t, small)
		time.Sleep(3 * time.Second) // the client reads nothing more
		answered := stop()
		rdr.Release()
		if answered == 0 {
			t.Fatal("no small query answered while the stream stalled")
		}
		wantPeak(t, pid, "stalled stream")
	})
}

// smallQueries runs SELECT count(*) FROM orders on cnxn until the
// returned function is called, failing t on an error or a wrong count;
// the function returns how many answered.
func smallQueries(t *testing.T, cnxn adbc.Connection) func() int {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var n int
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := countOrders(cnxn)
			if err == nil && got != 50000 {
				err = fmt.Errorf("count(*) answered %d, want 50000", got)
			}
			if err != nil {
				failed = err
				return
			}
			n++
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		if failed != nil {
			t.Fatalf("small query: %v", failed)
		}
		return n
	}
}

func countOrders(cnxn adbc.Connection) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT count(*) FROM orders"); err != nil {
		return 0, err
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if rec.NumRows() > 0 {
			n = rec.Column(0).(*array.Int64).Value(0)
		}
	}
	return n, rdr.Err()
}

// wantPeak fails t when the process's peak RSS (VmHWM) passed the budget
// plus the overhead.
func wantPeak(t *testing.T, pid int, what string) {
	t.Helper()
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("%s: peak RSS %d MiB", what, peak>>20)
	if peak > testBudget+testRSSOverhead {
		t.Fatalf("%s: peak RSS %d MiB, over the budget of %d MiB plus %d MiB", what, peak>>20, testBudget>>20, testRSSOverhead>>20)
	}
}

// procStatus reads a size field (kB) of /proc/PID/status in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := statusField(string(b), field)
	if n == 0 {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	return n
}

// TestGoSideBudget: with a small budget of Go-side Arrow buffers, a scan
// streamed straight from the table (the passthrough, which decodes ahead)
// ends with RESOURCE_EXHAUSTED naming limits.query_memory or
// limits.memory_budget and the query id, every buffer it held is
// released (the budget counts 0 again), and a query whose buffers fit
// still answers.
func TestGoSideBudget(t *testing.T) {
	for _, c := range []struct {
		name          string
		process, each int64
		key           string
	}{
		{"per query", 0, 256 << 10, "limits.query_memory"},
		{"per process", 256 << 10, 0, "limits.memory_budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			budget := membudget.New(c.process, c.each, nil)
			s := StartCluster(t, Demo(), WithLimits(cluster.Limits{Memory: budget}))
			cnxn := adbcConn(t, s.Addr())
			proxied := adbcConn(t, s.Addr(), map[string]string{
				adbcflight.OptionRPCCallHeaderPrefix + "x-icefloe-single-endpoint": "true"})
			for _, cn := range []adbc.Connection{cnxn, proxied} {
				err := runADBC(cn, "SELECT * FROM orders", false, false)
				wantLimit(t, c.name, err, codes.ResourceExhausted, "(limit key "+c.key+")")
				if !queryIDRe.MatchString(err.Error()) {
					t.Fatalf("%q does not name the query id", err)
				}
			}
			if c.process > 0 {
				// A bulk ingest's batches count toward the process: one
				// of 40,000 rows (~1 MiB) is past a 256 KiB budget, and
				// nothing is committed.
				_, err := ingest(t, cnxn, "budget_ingest", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 2, 40000))
				wantLimit(t, c.name+" ingest", err, codes.ResourceExhausted, "(limit key "+c.key+")")
				wantRows(t, cnxn, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'budget_ingest'`, "0")
			}
			if n, err := countOrders(cnxn); err != nil || n != 50000 {
				t.Fatalf("count(*) = %d, %v", n, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for budget.Used() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the budget still counts %d bytes after the queries ended", budget.Used())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if budget.Peak() <= 256<<10 {
				t.Fatalf("peak %d: the scan's buffers were not counted", budget.Peak())
			}
		})
	}
}
