package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The configs of the run: the limits every process applies (the
// coordinator its statement limits, each worker its fragment limits) and
// the workers' DuckDB memory limit. docs/operations.md describes each key.
const limitsConfig = `limits:
  max_running_statements: 16
  max_queued_statements: 64
  max_running_fragments: 4
  max_queued_fragments: 64
  queue_timeout: 30s
  statement_timeout: 30s
`

const workerMemoryConfig = "memory_limit: 1GB\n"

// leftPlanning is the coordinator's log line of a worker leaving planning.
const leftPlanning = "worker left planning"

// crossTimeout is the cross-join client's session statement_timeout.
const crossTimeout = "20s"

func main() {
	os.Exit(mainErr())
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func mainErr() int {
	bin := flag.String("bin", os.Getenv("ICEFLOE_BIN"), "the icefloe binary")
	data := flag.String("data", "integration/.tpch-data/sf0.1", "folder of tpchgen-cli's orders.parquet and lineitem.parquet")
	clients := flag.Int("clients", 16, "mixed clients")
	duration := flag.Duration("duration", 60*time.Second, "length of each phase")
	workers := flag.Int("workers", 2, "icefloe worker processes")
	out := flag.String("out", "bench/load/out/results.json", "results file")
	doc := flag.String("doc", "docs/benchmarks.md", "doc whose load section is rewritten (empty: none)")
	report := flag.String("report", "", "only rewrite -doc's section from this results file")
	notes := flag.String("notes", "bench/load/notes.md", "hand-written reading of the run, copied into the section after its summary")
	logs := flag.String("logs", "bench/load/out/logs", "folder of the processes' logs (emptied first)")
	soakFor := flag.Duration("soak", 0, "run the soak (soak.go) for this long instead of the load phases")
	soakClients := flag.Int("soak-clients", 8, "the soak's clients")
	soakEvery := flag.Duration("soak-sample", 10*time.Second, "how often the soak samples every process's live heap")
	soakCache := flag.Int64("soak-cache-bytes", 64<<20, "metadata_cache_bytes of the soak's processes")
	soakOut := flag.String("soak-out", "bench/load/out/soak.json", "the soak's results file")
	flag.Parse()
	if *report != "" {
		if err := writeReport(*report, *doc, *notes); err != nil {
			logf("report: %v", err)
			return 1
		}
		return 0
	}
	if *bin == "" {
		logf("-bin (or ICEFLOE_BIN) is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *soakFor > 0 {
		return mainSoak(ctx, *bin, *data, *logs, *soakClients, *workers, *soakFor, *soakEvery, *soakCache, *soakOut, *doc)
	}
	res, err := benchmark(ctx, *bin, *data, *logs, *clients, *workers, *duration)
	if res != nil {
		if werr := writeJSON(*out, res); werr != nil {
			logf("%v", werr)
			return 1
		}
		logf("wrote %s", *out)
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	if *doc != "" {
		if err := writeReport(*out, *doc, *notes); err != nil {
			logf("report: %v", err)
			return 1
		}
		logf("rewrote the load section of %s", *doc)
	}
	if res.Failed != "" {
		logf("FAILED: %s", res.Failed)
		return 1
	}
	return 0
}

// mainSoak runs the soak, writes its results and rewrites doc's soak
// section; it fails when an answer was wrong.
func mainSoak(ctx context.Context, bin, data, logs string, clients, workers int, d, every time.Duration, cacheBytes int64, out, doc string) int {
	res, err := soak(ctx, bin, data, logs, clients, workers, d, every, cacheBytes)
	if res != nil {
		if werr := writeJSON(out, res); werr != nil {
			logf("%v", werr)
			return 1
		}
		logf("wrote %s", out)
		for _, p := range res.Processes {
			logf("%-12s live heap %.0f → %.0f MB (peak %.0f, %.0f at rest after); slope %+.2f MB/min, %+.2f MB/min over the second half; RSS %.0f → %.0f MB",
				p.Name, p.StartHeapMB, p.EndHeapMB, p.PeakHeapMB, p.RestHeapMB, p.SlopeMBPerMin, p.LateSlopeMBPerMin, p.StartRSSMB, p.EndRSSMB)
		}
		logf("load average %.2f at the start, %.2f at the end, %.2f on average", res.LoadavgStart[0], res.Loadavg[0], res.LoadavgMean)
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	if doc != "" {
		if err := writeSoakReport(out, doc); err != nil {
			logf("report: %v", err)
			return 1
		}
		logf("rewrote the soak section of %s", doc)
	}
	if len(res.Wrong) > 0 {
		logf("FAILED: wrong answers: %v", res.Wrong)
		return 1
	}
	return 0
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// rig is a running cluster with the TPC-H tables loaded, and a
// connection to its coordinator.
type rig struct {
	dir  string
	c    *cluster
	db   adbc.Database
	cnxn adbc.Connection
	exp  *expected
	took map[string]float64 // load seconds per table
}

// startRig starts the cluster with the given configs (a temporary
// folder holds its data; logs is emptied first), waits for its workers
// and loads the tables. Close stops and removes everything.
func startRig(ctx context.Context, bin, data, logs string, workers int, coordYAML, workerYAML string) (r *rig, err error) {
	r = &rig{}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.dir, err = os.MkdirTemp("", "icefloe-load-"); err != nil {
		return r, err
	}
	if err := os.RemoveAll(logs); err != nil {
		return r, err
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return r, err
	}
	coordCfg, workerCfg := filepath.Join(r.dir, "coordinator.yaml"), filepath.Join(r.dir, "worker.yaml")
	if err := os.WriteFile(coordCfg, []byte(coordYAML), 0o644); err != nil {
		return r, err
	}
	if err := os.WriteFile(workerCfg, []byte(workerYAML), 0o644); err != nil {
		return r, err
	}
	logf("starting %d workers and a coordinator (logs in %s)", workers, logs)
	if r.c, err = startCluster(bin, r.dir, logs, workers, coordCfg, workerCfg); err != nil {
		return r, err
	}
	if r.db, err = adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: r.c.uri()}); err != nil {
		return r, err
	}
	if r.cnxn, err = r.db.Open(ctx); err != nil {
		return r, err
	}
	if err := waitWorkers(ctx, r.cnxn); err != nil {
		return r, err
	}
	r.exp, r.took, err = loadTables(ctx, r.cnxn, data, logf)
	return r, err
}

func (r *rig) close() {
	if r.cnxn != nil {
		r.cnxn.Close()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.c != nil {
		if err := r.c.stop(); err != nil {
			logf("stop: %v", err)
		}
		logf("stopped every process")
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// benchmark runs the whole test; the results are filled as far as it got.
func benchmark(ctx context.Context, bin, data, logs string, clients, workers int, duration time.Duration) (*results, error) {
	res := newResults(bin, data, clients, workers, duration)
	r, err := startRig(ctx, bin, data, logs, workers, limitsConfig, workerMemoryConfig+limitsConfig)
	if r.c != nil {
		for _, p := range r.c.procs() {
			res.Processes = append(res.Processes, p.name)
		}
	}
	if err != nil {
		return res, err
	}
	defer r.close()
	c, db, cnxn, exp, dir := r.c, r.db, r.cnxn, r.exp, r.dir
	res.Dataset.Orders, res.Dataset.Lineitem, res.Dataset.LoadSeconds = exp.orders, exp.lineitem, r.took
	w := newWorkload(exp)
	if err := warmUp(ctx, cnxn, w); err != nil {
		res.Failed = err.Error()
		return res, nil
	}
	ins := &inserts{acked: map[[2]int64]bool{}, failed: map[[2]int64]bool{}}
	// Each phase INSERTs into a table of its own, created empty, so the
	// phases compare; the third is the control: the mixed load again,
	// without the cross joins.
	phases := []struct {
		name  string
		cross bool
	}{{"mixed", false}, {"mixed + cross joins", true}, {"mixed again", false}}
	var tables []string
	for i, ph := range phases {
		name, cross := ph.name, ph.cross
		table := fmt.Sprintf("load_inserts_%d", i+1)
		if _, err := update(ctx, cnxn, "CREATE TABLE "+table+" (client BIGINT, seq BIGINT)"); err != nil {
			return res, err
		}
		tables = append(tables, table)
		if i == 0 {
			if res.AloneInsert[0], err = insertsAlone(ctx, cnxn, ins, table, 9000); err != nil {
				return res, err
			}
		}
		logf("phase %q: %d clients%s for %s", name, clients, map[bool]string{true: " + 1 cross-join client"}[cross], duration)
		ph, err := runPhase(ctx, c, db, w, ins, name, table, int64(i*1000), clients, cross, duration)
		if ph != nil {
			res.Phases = append(res.Phases, ph)
			logPhase(ph)
		}
		if err != nil {
			return res, err
		}
	}
	if res.AloneInsert[1], err = insertsAlone(ctx, cnxn, ins, tables[len(tables)-1], 9001); err != nil {
		return res, err
	}
	res.Inserts, err = checkInserts(ctx, cnxn, ins, tables, filepath.Join(dir, "data", "warehouse", "default.db"))
	if err != nil {
		return res, err
	}
	res.finish()
	return res, nil
}

// aloneInserts is how many one-row INSERTs insertsAlone times.
const aloneInserts = 9

// insertsAlone times aloneInserts one-row INSERTs into table one after
// another with nothing else running (under client id), and counts the
// table's snapshots after them.
func insertsAlone(ctx context.Context, cnxn adbc.Connection, ins *inserts, table string, id int64) (alone, error) {
	var ds []time.Duration
	for seq := range int64(aloneInserts) {
		o := insertOp(table, id, seq)
		start := time.Now()
		n, err := update(ctx, cnxn, o.sql)
		if err != nil || n != 1 {
			ins.add(o.insert, false)
			return alone{}, fmt.Errorf("an INSERT alone: %d rows, %v", n, err)
		}
		ds = append(ds, time.Since(start))
		ins.add(o.insert, true)
	}
	_, cells, err := run(ctx, cnxn, op{sql: fmt.Sprintf(`SELECT count(*) FROM "%s$snapshots"`, table)})
	if err != nil {
		return alone{}, err
	}
	a := alone{Snapshots: cells[0][0]}
	slices.Sort(ds)
	a.P50ms, a.MaxMs = ms(percentile(ds, 50)), ms(ds[len(ds)-1])
	return a, nil
}

// waitWorkers waits until a write through the workers succeeds.
func waitWorkers(ctx context.Context, cnxn adbc.Connection) error {
	if _, err := update(ctx, cnxn, "CREATE TABLE load_probe (x BIGINT)"); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := update(ctx, cnxn, "INSERT INTO load_probe VALUES (1)")
		if err == nil {
			_, err = update(ctx, cnxn, "DROP TABLE load_probe")
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the workers took no write within 60 s: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// warmUp runs every checked query once, unloaded: a wrong answer here
// stops the run before it measures anything.
func warmUp(ctx context.Context, cnxn adbc.Connection, w *workload) error {
	r := rand.New(rand.NewPCG(1, 1))
	ops := []op{}
	for range 4 {
		ops = append(ops, w.scan(r), w.aggregate(r), w.point(r))
	}
	for _, o := range ops {
		rows, cells, err := run(ctx, cnxn, o)
		if err != nil {
			return fmt.Errorf("warm-up %s: %w", o.name, err)
		}
		if o.countOnly && rows != o.wantRows {
			return fmt.Errorf("warm-up %s: %d rows, want %d", o.name, rows, o.wantRows)
		}
		if o.check != nil {
			if d := o.check(cells); d != "" {
				return fmt.Errorf("warm-up %s: wrong answer: %s", o.name, d)
			}
		}
	}
	return nil
}

// runPhase runs clients mixed clients (ids from idBase) and, with cross,
// one cross-join client, for duration; then lets the processes settle.
func runPhase(ctx context.Context, c *cluster, db adbc.Database, w *workload, ins *inserts, name, table string, idBase int64,
	clients int, cross bool, duration time.Duration) (*phase, error) {
	ph := &phase{Name: name, Clients: clients, CrossClient: cross, Goroutines: map[string][2]goroutineCount{}, HWMReset: true}
	before := map[string]goroutineCount{}
	for _, p := range c.procs() {
		n, err := goroutines(ctx, p)
		if err != nil {
			return nil, err
		}
		before[p.name] = n
		ph.HWMReset = resetHWM(p.pid()) && ph.HWMReset
	}
	m0, err := scrape(ctx, c.coordinator)
	if err != nil {
		return nil, err
	}
	left0 := countLines(c.coordinator.log, leftPlanning)
	runtime.GC()
	conns := make([]adbc.Connection, 0, clients+1)
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for range clients {
		cn, err := db.Open(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, cn)
	}
	var crossCnxn adbc.Connection
	if cross {
		var err error
		if crossCnxn, err = crossConnection(ctx, c.uri()); err != nil {
			return nil, err
		}
		defer crossCnxn.Close()
	}
	tallies := map[string]*tally{}
	for _, k := range []string{kindScan, kindAggregate, kindPoint, kindInsert, kindCross} {
		tallies[k] = newTally(k)
	}
	la0, _ := loadavg()
	ph.LoadavgStart = la0
	s := startSampler(c.procs(), 250*time.Millisecond)
	start := time.Now()
	stopAt := start.Add(duration)
	var wg sync.WaitGroup
	for i, cn := range conns {
		wg.Go(func() { client(ctx, cn, idBase+int64(i), table, stopAt, w.mixed, tallies, ins, false) })
	}
	if cross {
		wg.Go(func() {
			client(ctx, crossCnxn, idBase+999, table, stopAt, func(_ *rand.Rand, n int) op { return w.crossJoin(n) }, tallies, ins, true)
		})
	}
	wg.Wait()
	s.stop()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	ph.fill(start, tallies, s, c)
	ph.WorkersLeftPlanning = countLines(c.coordinator.log, leftPlanning) - left0
	m1, err := scrape(ctx, c.coordinator)
	if err != nil {
		return ph, err
	}
	ph.Coordinator = map[string]float64{}
	for _, k := range coordinatorCounters {
		ph.Coordinator[k] = m1[k] - m0[k]
	}
	for _, cn := range conns {
		cn.Close()
	}
	conns = nil
	after, settled, err := settledGoroutines(ctx, c, before)
	if err != nil {
		return ph, err
	}
	ph.SettledSeconds = settled
	for _, p := range c.procs() {
		ph.Goroutines[p.name] = [2]goroutineCount{before[p.name], after[p.name]}
		if after[p.name].Total > before[p.name].Total {
			path := filepath.Join(c.logs, fmt.Sprintf("%s-goroutines-phase%d.txt", p.name, idBase/1000+1))
			if err := saveGoroutines(ctx, p, path); err != nil {
				return ph, err
			}
		}
	}
	la1, _ := loadavg()
	ph.LoadavgEnd = la1
	return ph, nil
}

// crossConnection is a connection whose session statement_timeout is
// crossTimeout (sessions live in a cookie).
func crossConnection(ctx context.Context, uri string) (adbc.Connection, error) {
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{
		adbc.OptionKeyURI: uri, "adbc.flight.sql.rpc.with_cookie_middleware": "true"})
	if err != nil {
		return nil, err
	}
	cn, err := db.Open(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	po, ok := cn.(adbc.PostInitOptions)
	if !ok {
		cn.Close()
		db.Close()
		return nil, errors.New("the ADBC connection takes no options")
	}
	if err := po.SetOption("adbc.flight.sql.session.option.statement_timeout", crossTimeout); err != nil {
		cn.Close()
		db.Close()
		return nil, fmt.Errorf("session statement_timeout: %w", err)
	}
	return closeBoth{cn, db}, nil
}

// closeBoth is a connection that closes its database with it.
type closeBoth struct {
	adbc.Connection
	db adbc.Database
}

func (c closeBoth) Close() error { return errors.Join(c.Connection.Close(), c.db.Close()) }

// settledGoroutines reads every process's goroutines once a second until
// each is back at its count before the phase or stops changing (3 equal
// reads in a row), at most 20 s; it returns the last counts and how long
// that took.
func settledGoroutines(ctx context.Context, c *cluster, before map[string]goroutineCount) (map[string]goroutineCount, float64, error) {
	start := time.Now()
	last, same := map[string]goroutineCount{}, 0
	for {
		now := map[string]goroutineCount{}
		back, equal := true, true
		for _, p := range c.procs() {
			n, err := goroutines(ctx, p)
			if err != nil {
				return nil, 0, err
			}
			now[p.name] = n
			back = back && n.Total <= before[p.name].Total
			equal = equal && n == last[p.name]
		}
		if equal {
			same++
		} else {
			same = 0
		}
		last = now
		if back || same >= 2 || time.Since(start) > 20*time.Second {
			return now, time.Since(start).Seconds(), nil
		}
		time.Sleep(time.Second)
	}
}

// checkInserts compares the INSERT tables with what was acknowledged:
// every acknowledged row exactly once, nothing else but rows of failed
// INSERTs; and counts the files in their data folders (under warehouse)
// that the tables do not list.
func checkInserts(ctx context.Context, cnxn adbc.Connection, ins *inserts, tables []string, warehouse string) (insertCheck, error) {
	chk := insertCheck{Acked: len(ins.acked), Failed: len(ins.failed)}
	seen := map[[2]int64]int{}
	for _, t := range tables {
		files, err := os.ReadDir(filepath.Join(warehouse, t, "data"))
		if err != nil {
			return chk, err
		}
		_, listed, err := run(ctx, cnxn, op{sql: fmt.Sprintf(`SELECT count(*) FROM "%s$files"`, t)})
		if err != nil {
			return chk, err
		}
		var n int
		if _, err := fmt.Sscan(listed[0][0], &n); err != nil {
			return chk, err
		}
		chk.DataFiles += n
		chk.StrayFiles += len(files) - n
		_, cells, err := run(ctx, cnxn, op{sql: "SELECT client, seq FROM " + t})
		if err != nil {
			return chk, err
		}
		chk.Rows += len(cells)
		for _, row := range cells {
			var k [2]int64
			if _, err := fmt.Sscan(row[0]+" "+row[1], &k[0], &k[1]); err != nil {
				return chk, fmt.Errorf("%s row %v: %w", t, row, err)
			}
			seen[k]++
		}
	}
	for k, n := range seen {
		switch {
		case n > 1:
			chk.Doubled++
		case ins.failed[k]:
			chk.FailedButCommitted++
		case !ins.acked[k]:
			chk.Unknown++
		}
	}
	for k := range ins.acked {
		if seen[k] == 0 {
			chk.Lost++
		}
	}
	return chk, nil
}

// version is what `icefloe --version` prints.
func version(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
