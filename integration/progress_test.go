package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/admit"
)

// progressWork is a table of progressFiles files whose rows each cost a
// worker a hash over a string of some 20 kB: a statement over it runs
// several seconds, one group per file (progressCluster), read one group
// at a time per worker: eight rounds of two, so that the progress moves
// between the polls of a client however fast the machine.
const (
	progressFiles = 16
	progressRows  = 6000
	progressCost  = "md5(repeat(CAST(k AS VARCHAR), 4000))"
)

// progressCluster is two workers that run one fragment at a time, over
// one group per file.
func progressCluster(t *testing.T) *cluster.Standalone {
	t.Helper()
	return StartCluster(t, Workers(2), GroupBytes(1),
		WithLimits(cluster.Limits{Fragments: admit.Options{MaxRunning: 1, MaxQueued: 64, QueueTimeout: 5 * time.Minute}}))
}

// seedProgressWork creates the table work of progressFiles files.
func seedProgressWork(t *testing.T, cnxn adbc.Connection) {
	t.Helper()
	execUpdate(t, cnxn, "CREATE TABLE work (k BIGINT)")
	for i := range progressFiles {
		execUpdate(t, cnxn, fmt.Sprintf("INSERT INTO work SELECT range + %d FROM range(%d)", i*progressRows, progressRows))
	}
}

// incremental is a statement of q with incremental execution on.
func incremental(t *testing.T, cnxn adbc.Connection, q string) adbc.Statement {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	if err := stmt.SetOption(adbc.OptionKeyIncremental, adbc.OptionValueEnabled); err != nil {
		stmt.Close()
		t.Fatal(err)
	}
	return stmt
}

// sampleProgress reads stmt's progress every 20 ms until stop is closed
// and returns the values it saw change to.
func sampleProgress(t *testing.T, stmt adbc.Statement, stop <-chan struct{}) <-chan []float64 {
	t.Helper()
	out := make(chan []float64, 1)
	go func() {
		var seen []float64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			p, err := stmt.(adbc.GetSetOptions).GetOptionDouble(adbc.OptionKeyProgress)
			if err == nil && (len(seen) == 0 || seen[len(seen)-1] != p) {
				seen = append(seen, p)
			}
			select {
			case <-stop:
				out <- seen
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// pollToEnd calls stmt's ExecutePartitions until it answers no partition
// and returns how many calls it made, and the count and progress after
// the last call that answered partitions (-1 when none did).
func pollToEnd(t *testing.T, stmt adbc.Statement) (calls int, count int64, progress float64) {
	t.Helper()
	count, progress = -1, -1
	for {
		_, parts, n, err := stmt.ExecutePartitions(context.Background())
		if err != nil {
			t.Fatalf("ExecutePartitions #%d: %v", calls, err)
		}
		calls++
		if parts.NumPartitions == 0 {
			return calls, count, progress
		}
		count = n
		if progress, err = stmt.(adbc.GetSetOptions).GetOptionDouble(adbc.OptionKeyProgress); err != nil {
			t.Fatal(err)
		}
	}
}

// increasing says whether vs never decrease and has a value strictly
// between 0 and 1.
func increasing(vs []float64) bool {
	between := slices.ContainsFunc(vs, func(v float64) bool { return v > 0 && v < 1 })
	return between && slices.IsSorted(vs)
}

// Incremental execution through the Go ADBC driver: a CREATE TABLE … AS
// that takes a few seconds runs on the coordinator while
// ExecutePartitions polls it, and the statement's progress option
// (adbc.statement.exec.progress) climbs with the files its fragments
// read to 1 with the update's count; a query read while the driver polls
// reports the fraction of its files read the same way, and its rows are
// all there.
func TestIncrementalExecutionProgress(t *testing.T) {
	s := progressCluster(t)
	cnxn := adbcConn(t, s.Addr())
	seedProgressWork(t, cnxn)
	total := progressFiles * progressRows

	// The write.
	stmt := incremental(t, cnxn, "CREATE TABLE hashed AS SELECT k, "+progressCost+" AS h FROM work")
	defer stmt.Close()
	stop := make(chan struct{})
	samples := sampleProgress(t, stmt, stop)
	ctx := context.Background()
	polls, affected, final := pollToEnd(t, stmt)
	close(stop)
	seen := <-samples
	t.Logf("write: %d ExecutePartitions, progress seen %v, then %v with the count", polls, seen, final)
	if affected != int64(total) {
		t.Fatalf("CTAS count %d, want %d", affected, total)
	}
	if !increasing(seen) || final != 1 {
		t.Fatalf("the write's progress went %v, then %v with its count: want it to climb through (0, 1) to 1", seen, final)
	}
	if got := mustQuery(t, cnxn, "SELECT count(*), count(DISTINCT h) FROM hashed").rows[0]; got != fmt.Sprintf("%d | %d", total, total) {
		t.Fatalf("hashed holds %s", got)
	}

	// The query: its partitions are read while ExecutePartitions polls.
	q := incremental(t, cnxn, "SELECT k, "+progressCost+" AS h FROM work")
	defer q.Close()
	stop = make(chan struct{})
	samples = sampleProgress(t, q, stop)
	_, parts, _, err := q.ExecutePartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if parts.NumPartitions == 0 {
		t.Fatal("the query's first poll answered no partition")
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		rows int64
		errs []error
	)
	for _, p := range parts.PartitionIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdr, err := cnxn.ReadPartition(ctx, p)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			defer rdr.Release()
			for rdr.Next() {
				mu.Lock()
				rows += rdr.RecordBatch().NumRows()
				mu.Unlock()
			}
			if err := rdr.Err(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	polls, _, _ = pollToEnd(t, q)
	wg.Wait()
	close(stop)
	seen = <-samples
	t.Logf("query: %d partitions, %d ExecutePartitions, progress seen %v", parts.NumPartitions, polls, seen)
	if len(errs) > 0 || rows != int64(total) {
		t.Fatalf("read %d rows, want %d; errors %v", rows, total, errs)
	}
	// The driver sets the progress back to 0 once a query answered no new
	// partition: what it saw before is what counts.
	if seen = slices.DeleteFunc(seen, func(v float64) bool { return v == 0 }); !slices.IsSorted(seen) || !slices.ContainsFunc(seen, func(v float64) bool { return v > 0 }) {
		t.Fatalf("the query's progress went %v: want it to climb above 0", seen)
	}
}

// A client that polls a query to its end before it reads it is not kept
// waiting on reads only it can start: the poll after the first ends the
// polling at once, and the partitions it got read in full.
func TestIncrementalQueryReadAfterPolling(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	stmt := incremental(t, cnxn, "SELECT * FROM range(1000)")
	defer stmt.Close()
	ctx := context.Background()
	var all [][]byte
	for i := 0; ; i++ {
		start := time.Now()
		_, parts, _, err := stmt.ExecutePartitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("poll %d: %d partitions after %s", i, parts.NumPartitions, time.Since(start))
		if parts.NumPartitions == 0 {
			break
		}
		all = append(all, parts.PartitionIDs...)
		if i > 10 {
			t.Fatal("the polls never end")
		}
	}
	var rows int
	for _, p := range all {
		rdr, err := cnxn.ReadPartition(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(collect(t, rdr).rows)
	}
	if rows != 1000 {
		t.Fatalf("read %d rows, want 1000", rows)
	}
}

// progressBar is the progress line with a fraction: the bar, a percent
// strictly between 0 and 100, and the time so far.
var progressBar = regexp.MustCompile(`\[=*> *\] +([1-9][0-9]?)% · (?:.* · )?[0-9.]+m?s elapsed \(Ctrl-C cancels\)`)

// `icefloe sql` on a terminal draws a progress bar under a statement that
// runs more than a second: a CREATE TABLE … AS and a query over the
// progress work each show a percent the coordinator reported while they
// ran, the query its rows, bytes and endpoints too; Ctrl-C cancels the
// CREATE TABLE … AS on the coordinator; on a pipe the same script draws
// nothing.
func TestSQLProgressBar(t *testing.T) {
	bin := icefloeBin(t)
	s := progressCluster(t)
	cnxn := adbcConn(t, s.Addr())
	seedProgressWork(t, cnxn)
	ctas := "CREATE TABLE bar AS SELECT k, " + progressCost + " AS h FROM work;"
	// A filter every row fails: four endpoints, no rows.
	filter := "SELECT k FROM work WHERE " + progressCost + " = '';"

	term := startTerminal(t, bin, nil, "sql", "--addr", s.Addr())
	term.expect(`local\.default> $`, 30*time.Second)
	term.send(ctas + "\r")
	line := term.expect(progressBar.String(), 2*time.Minute)
	t.Logf("CTAS: %q", lastLine(line))
	out := term.expect(`local\.default> $`, 2*time.Minute)
	if !strings.Contains(out, fmt.Sprintf("%d rows affected", progressFiles*progressRows)) {
		t.Fatalf("CTAS:\n%s", out)
	}
	term.send(filter + "\r")
	line = term.expect(progressBar.String(), 2*time.Minute)
	t.Logf("query: %q", lastLine(line))
	if !regexp.MustCompile(`% · \d+ rows · \d+(\.\d)? k?B · endpoints \d+/\d+ · `).MatchString(line) {
		t.Fatalf("the query's progress line names no rows, bytes and endpoints:\n%q", lastLine(line))
	}
	out = term.expect(`local\.default> $`, 2*time.Minute)
	if !strings.Contains(out, "(0 rows)") {
		t.Fatalf("the query's result:\n%s", out)
	}

	// Ctrl-C cancels a running CREATE TABLE … AS on the coordinator: the
	// client stops polling it, and it must not commit.
	term.send("CREATE TABLE dropped AS SELECT k, " + progressCost + " AS h FROM work;\r")
	term.expect(progressBar.String(), 2*time.Minute)
	term.send("\x03")
	if out := term.expect(`local\.default> $`, 30*time.Second); !strings.Contains(out, "cancelled") {
		t.Fatalf("after Ctrl-C:\n%s", out)
	}
	waitRow(t, cnxn, "SELECT state FROM system.runtime.queries WHERE sql LIKE 'CREATE TABLE dropped%'",
		func(r string) bool { return r == "cancelled" })
	if _, err := query(t, cnxn, "SELECT count(*) FROM dropped"); err == nil {
		t.Fatal("the cancelled CREATE TABLE … AS made its table")
	}
	term.send(`\q` + "\r")
	if code := term.exit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// On a pipe: the results, no progress line.
	cmd := exec.Command(bin, "sql", "--addr", s.Addr())
	cmd.Stdin = strings.NewReader("CREATE TABLE piped AS SELECT k, " + progressCost + " AS h FROM work;\n" + filter + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "elapsed") || strings.Contains(stderr.String(), "\r") || !strings.Contains(stdout.String(), fmt.Sprint(progressFiles*progressRows)) ||
		!strings.Contains(stdout.String(), "(0 rows)") {
		t.Fatalf("on a pipe: stdout\n%s\nstderr %q", stdout.String(), stderr.String())
	}
}

// lastLine is what a terminal shows last of out's progress redraws.
func lastLine(out string) string {
	if i := strings.LastIndex(out, "\r\x1b[K"); i >= 0 {
		return out[i+4:]
	}
	return out
}

// statusRow is a statement's row on the status page: its progress
// percent, the files it read and planned, and its state.
var statusRow = regexp.MustCompile(`(?s)<tr class="(\w+)" data-query="\w+">.*?<progress max="100" value="(\d+)">.*?<td class="files">(?:(\d+)/(\d+) files)?.*?CREATE TABLE statused`)

// The status page, read with net/http while a CREATE TABLE … AS runs,
// shows its progress climbing with the files its fragments read of
// those planned, and 100% once it finished.
func TestStatusPageProgress(t *testing.T) {
	s := progressCluster(t)
	cnxn := adbcConn(t, s.Addr())
	seedProgressWork(t, cnxn)
	page := "http://" + statusListener(t, s.Coordinator) + "/"
	done := make(chan error, 1)
	go func() {
		done <- runADBC(adbcConn(t, s.Addr()), "CREATE TABLE statused AS SELECT k, "+progressCost+" AS h FROM work", true, false)
	}()
	get := func() []string {
		resp, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status page: %d %v", resp.StatusCode, err)
		}
		return statusRow.FindStringSubmatch(string(body))
	}
	var seen []string
	deadline := time.Now().Add(5 * time.Minute)
	for {
		m := get()
		if m != nil {
			seen = append(seen, fmt.Sprintf("%s %s%% %s/%s files", m[1], m[2], m[3], m[4]))
		}
		if m != nil && m[1] == "running" && m[2] != "0" && m[3] != "0" && m[3] != "" && m[4] == fmt.Sprint(progressFiles) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the statement ended (%v) before the page showed it part done: %v", err, seen)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the statement part done: %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The last fragments' reads arrive just after the statement ended.
	for {
		m := get()
		if m != nil && m[1] == "finished" && m[2] == "100" && m[3] == fmt.Sprint(progressFiles) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished statement's row: %v (seen %v)", m, slices.Compact(seen))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("seen %v", slices.Compact(seen))
}
