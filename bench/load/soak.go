package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

// The soak: -soak-clients clients for -soak of a mix that writes as much
// as it reads (scans, aggregates, point queries, one-row INSERTs, DELETEs
// of the client's own rows, streams opened and abandoned), expire_snapshots
// on the written table every minute, and every process's live heap (Go's
// HeapAlloc right after a forced GC, from its pprof handler) sampled every
// -soak-sample. Its figure is each process's live-heap slope in MB a
// minute, fitted by least squares over the whole run and over its second
// half (after the caches filled): a process whose heap is bounded levels,
// one that leaks keeps its slope.

// Kinds of the soak's ops beyond the load's.
const (
	kindDelete  = "delete"
	kindAbandon = "abandoned stream"
	kindExpire  = "expire_snapshots"
)

var soakWeights = []struct {
	kind   string
	weight int
}{{kindScan, 10}, {kindAggregate, 20}, {kindPoint, 30}, {kindInsert, 25}, {kindDelete, 10}, {kindAbandon, 5}}

// soakConfig is the soak's limits: those of the load run, with each
// process's metadata cache bounded low enough to fill within minutes,
// so the slope after it shows whether the heap levels.
func soakConfig(cacheBytes int64) string {
	return limitsConfig + fmt.Sprintf("metadata_cache_bytes: %d\n", cacheBytes)
}

// abandonHold is how long an abandoned stream is kept open, unread,
// before its client lets it go.
const abandonHold = 20 * time.Second

// restSettle is how long the soak waits after its clients ended before it
// reads what each process keeps.
const restSettle = 5 * time.Second

// soakTable is the table the soak's clients write.
const soakTable = "soak_rows"

// heapSample is one process's memory at one moment.
type heapSample struct {
	Seconds float64 `json:"s"`
	HeapMB  float64 `json:"heap_mb"` // live heap: HeapAlloc after a GC
	RSSMB   float64 `json:"rss_mb"`
}

// procSoak is one process's series and its fitted slopes.
type procSoak struct {
	Name    string       `json:"name"`
	Samples []heapSample `json:"samples"`
	// SlopeMBPerMin is the live heap's slope over the whole run;
	// LateSlopeMBPerMin over its second half; RSSSlopeMBPerMin the RSS's
	// over the second half.
	SlopeMBPerMin     float64 `json:"slope_mb_per_min"`
	LateSlopeMBPerMin float64 `json:"late_slope_mb_per_min"`
	RSSSlopeMBPerMin  float64 `json:"rss_late_slope_mb_per_min"`
	StartHeapMB       float64 `json:"start_heap_mb"`
	PeakHeapMB        float64 `json:"peak_heap_mb"`
	EndHeapMB         float64 `json:"end_heap_mb"`
	StartRSSMB        float64 `json:"start_rss_mb"`
	EndRSSMB          float64 `json:"end_rss_mb"`
	// RestHeapMB is the live heap once the clients had gone and the
	// abandoned streams were let go: what the process keeps.
	RestHeapMB float64 `json:"rest_heap_mb"`
}

// soakResults are what a soak run writes.
type soakResults struct {
	Version         string               `json:"version"`
	Started         string               `json:"started"`
	Clients         int                  `json:"clients"`
	Workers         int                  `json:"workers"`
	DurationSeconds float64              `json:"duration_seconds"`
	SampleSeconds   float64              `json:"sample_seconds"`
	CacheBytes      int64                `json:"metadata_cache_bytes"`
	Loadavg         [3]float64           `json:"loadavg_end"`
	LoadavgStart    [3]float64           `json:"loadavg_start"`
	LoadavgMean     float64              `json:"loadavg_1m_mean"`
	Ops             map[string]int       `json:"ops"`
	Errors          map[string]int       `json:"errors"`
	ErrorSamples    map[string]string    `json:"error_samples,omitempty"`
	Wrong           map[string]string    `json:"wrong,omitempty"`
	Processes       []*procSoak          `json:"processes"`
	Snapshots       string               `json:"snapshots_at_end"`
	seriesMu        sync.Mutex           `json:"-"`
	series          map[string]*procSoak `json:"-"`
}

// soak runs the soak; the results are filled as far as it got.
func soak(ctx context.Context, bin, data, logs string, clients, workers int, duration, every time.Duration, cacheBytes int64) (*soakResults, error) {
	res := &soakResults{Version: version(bin), Started: time.Now().UTC().Format(time.RFC3339), Clients: clients, Workers: workers,
		DurationSeconds: duration.Seconds(), SampleSeconds: every.Seconds(), CacheBytes: cacheBytes,
		Ops: map[string]int{}, Errors: map[string]int{}, ErrorSamples: map[string]string{}, Wrong: map[string]string{},
		series: map[string]*procSoak{}}
	r, err := startRig(ctx, bin, data, logs, workers, soakConfig(cacheBytes), workerMemoryConfig+soakConfig(cacheBytes))
	if err != nil {
		return res, err
	}
	defer r.close()
	c, db, cnxn, exp := r.c, r.db, r.cnxn, r.exp
	w := newWorkload(exp)
	if err := warmUp(ctx, cnxn, w); err != nil {
		return res, err
	}
	if _, err := update(ctx, cnxn, "CREATE TABLE "+soakTable+" (client BIGINT, seq BIGINT)"); err != nil {
		return res, err
	}
	for _, p := range c.procs() {
		res.series[p.name] = &procSoak{Name: p.name}
	}
	tallies := map[string]*tally{}
	for _, k := range []string{kindScan, kindAggregate, kindPoint, kindInsert, kindDelete, kindAbandon, kindExpire} {
		tallies[k] = newTally(k)
	}
	res.LoadavgStart, _ = loadavg()
	logf("soak: %d clients for %s, sampling every %s, metadata caches bounded at %d MiB", clients, duration, every, cacheBytes>>20)
	start := time.Now()
	stopAt := start.Add(duration)
	var loads []float64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			res.sample(ctx, c, start)
			if la, err := loadavg(); err == nil {
				loads = append(loads, la[0])
			}
			if time.Until(stopAt) <= 0 || ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(every, time.Until(stopAt))):
			}
		}
	}()
	var wg sync.WaitGroup
	var abandoned sync.WaitGroup
	hold := make(chan struct{}, clients) // bounds the streams held open at once
	for i := range clients {
		cn, err := db.Open(ctx)
		if err != nil {
			return res, err
		}
		defer cn.Close()
		wg.Go(func() { soakClient(ctx, cn, int64(i), stopAt, w, tallies, hold, &abandoned) })
	}
	wg.Go(func() { expireEveryMinute(ctx, cnxn, stopAt, tallies[kindExpire]) })
	wg.Wait()
	abandoned.Wait()
	<-sampled
	if ctx.Err() != nil {
		return res, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	res.Loadavg, _ = loadavg()
	for _, l := range loads {
		res.LoadavgMean += l / float64(len(loads))
	}
	if _, cells, err := run(ctx, cnxn, op{sql: fmt.Sprintf(`SELECT count(*) FROM "%s$snapshots"`, soakTable)}); err == nil {
		res.Snapshots = cells[0][0]
	}
	for k, t := range tallies {
		t.mu.Lock()
		res.Ops[k] = len(t.durations)
		for code, n := range t.errors {
			res.Errors[k+": "+code] += n
			res.ErrorSamples[k+": "+code] = t.samples[code]
		}
		if t.wrong > 0 {
			res.Wrong[k] = fmt.Sprintf("%d wrong; first %s", t.wrong, t.wrongSeen)
		}
		t.mu.Unlock()
	}
	time.Sleep(restSettle)
	for _, p := range c.procs() {
		ps := res.series[p.name]
		ps.fit()
		if heap, err := liveHeap(ctx, p); err == nil {
			ps.RestHeapMB = float64(heap) / 1e6
		}
		res.Processes = append(res.Processes, ps)
		// What the live heap holds at the end, for `go tool pprof`.
		if err := saveProfile(ctx, p, "/debug/pprof/heap?gc=1", filepath.Join(logs, p.name+"-heap.pb.gz")); err != nil {
			logf("heap profile of %s: %v", p.name, err)
		}
	}
	return res, nil
}

// saveProfile writes what path of the process's pprof handler answers to
// file.
func saveProfile(ctx context.Context, p *proc, path, file string) error {
	body, err := get(ctx, p, path)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	return errors.Join(err, f.Close())
}

// sample reads every process's live heap and RSS once.
func (r *soakResults) sample(ctx context.Context, c *cluster, start time.Time) {
	for _, p := range c.procs() {
		heap, err := liveHeap(ctx, p)
		if err != nil {
			logf("sample %s: %v", p.name, err)
			continue
		}
		rss, _, _ := procStatus(p.pid())
		s := heapSample{Seconds: time.Since(start).Seconds(), HeapMB: float64(heap) / 1e6, RSSMB: float64(rss) / 1e6}
		r.seriesMu.Lock()
		ps := r.series[p.name]
		ps.Samples = append(ps.Samples, s)
		r.seriesMu.Unlock()
		logf("  %-12s %6.0fs  live heap %7.1f MB  RSS %7.1f MB", p.name, s.Seconds, s.HeapMB, s.RSSMB)
	}
}

// liveHeap is the process's HeapAlloc right after a GC: its pprof heap
// profile with gc=1 runs one first, and debug=1 ends with the MemStats.
func liveHeap(ctx context.Context, p *proc) (int64, error) {
	body, err := get(ctx, p, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	const pre = "# HeapAlloc = "
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), pre); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s heap profile: no HeapAlloc line", p.name)
}

// fit fills the slopes and the summary figures from the samples.
func (ps *procSoak) fit() {
	n := len(ps.Samples)
	if n == 0 {
		return
	}
	ps.StartHeapMB, ps.EndHeapMB = ps.Samples[0].HeapMB, ps.Samples[n-1].HeapMB
	ps.StartRSSMB, ps.EndRSSMB = ps.Samples[0].RSSMB, ps.Samples[n-1].RSSMB
	for _, s := range ps.Samples {
		ps.PeakHeapMB = max(ps.PeakHeapMB, s.HeapMB)
	}
	heap := func(s heapSample) float64 { return s.HeapMB }
	rss := func(s heapSample) float64 { return s.RSSMB }
	ps.SlopeMBPerMin = slope(ps.Samples, heap)
	late := ps.Samples[n/2:]
	ps.LateSlopeMBPerMin = slope(late, heap)
	ps.RSSSlopeMBPerMin = slope(late, rss)
}

// slope is the least-squares slope of y over the samples, per minute.
func slope(ss []heapSample, y func(heapSample) float64) float64 {
	if len(ss) < 2 {
		return 0
	}
	var mx, my float64
	for _, s := range ss {
		mx += s.Seconds / 60
		my += y(s)
	}
	mx /= float64(len(ss))
	my /= float64(len(ss))
	var num, den float64
	for _, s := range ss {
		dx := s.Seconds/60 - mx
		num += dx * (y(s) - my)
		den += dx * dx
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// soakClient loops over the soak's mix until stop.
func soakClient(ctx context.Context, cnxn adbc.Connection, id int64, stop time.Time, w *workload, tallies map[string]*tally,
	hold chan struct{}, abandoned *sync.WaitGroup) {
	r := rand.New(rand.NewPCG(uint64(id), 7))
	total := 0
	for _, m := range soakWeights {
		total += m.weight
	}
	var seq int64
	for time.Now().Before(stop) && ctx.Err() == nil {
		x, kind := r.IntN(total), ""
		for _, m := range soakWeights {
			if x < m.weight {
				kind = m.kind
				break
			}
			x -= m.weight
		}
		var o op
		switch kind {
		case kindScan:
			o = w.scan(r)
		case kindAggregate:
			o = w.aggregate(r)
		case kindPoint:
			o = w.point(r)
		case kindInsert:
			o = insertOp(soakTable, id, seq)
			seq++
		case kindDelete:
			o = op{kind: kindDelete, name: "DELETE of the client's older rows", update: true,
				sql: fmt.Sprintf("DELETE FROM %s WHERE client = %d AND seq < %d", soakTable, id, seq-5)}
		case kindAbandon:
			abandon(ctx, cnxn, w.scan(r), tallies[kindAbandon], hold, abandoned)
			continue
		}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		start := time.Now()
		rows, cells, err := run(octx, cnxn, o)
		took := time.Since(start)
		cancel()
		if ctx.Err() != nil {
			return
		}
		wrong := ""
		switch {
		case err != nil:
		case o.kind == kindInsert && rows != 1:
			wrong = fmt.Sprintf("inserted %d rows, want 1", rows)
		case o.countOnly && rows != o.wantRows:
			wrong = fmt.Sprintf("%d rows, want %d", rows, o.wantRows)
		case o.check != nil:
			wrong = o.check(cells)
		}
		tallies[o.kind].record(o, took, err, wrong, false)
	}
}

// abandon opens a scan, reads its first batch and leaves the stream
// unread for abandonHold before letting it go, as a client that stopped
// reading does; with as many held as there are clients it runs nothing.
func abandon(ctx context.Context, cnxn adbc.Connection, o op, t *tally, hold chan struct{}, abandoned *sync.WaitGroup) {
	select {
	case hold <- struct{}{}:
	default:
		return
	}
	o.kind, o.name = kindAbandon, "abandoned "+o.name
	start := time.Now()
	stmt, err := cnxn.NewStatement()
	if err == nil {
		err = stmt.SetSqlQuery(o.sql)
	}
	if err != nil {
		<-hold
		t.record(o, 0, err, "", false)
		return
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err == nil && !rdr.Next() {
		err = rdr.Err()
	}
	t.record(o, time.Since(start), err, "", false)
	abandoned.Go(func() {
		defer func() { <-hold }()
		select {
		case <-time.After(abandonHold):
		case <-ctx.Done():
		}
		if rdr != nil {
			rdr.Release()
		}
		stmt.Close()
	})
}

// expireEveryMinute expires the written table's snapshots older than a
// minute, keeping the last 5, once a minute until stop.
func expireEveryMinute(ctx context.Context, cnxn adbc.Connection, stop time.Time, t *tally) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Minute, time.Until(stop))):
		}
		if time.Until(stop) <= 0 {
			return
		}
		older := time.Now().Add(-time.Minute).UTC().Format("2006-01-02 15:04:05")
		o := op{kind: kindExpire, name: "CALL system.expire_snapshots",
			sql: fmt.Sprintf("CALL system.expire_snapshots(table => '%s', older_than => TIMESTAMP '%s', retain_last => 5)", soakTable, older)}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		start := time.Now()
		_, _, err := run(octx, cnxn, o)
		cancel()
		t.record(o, time.Since(start), err, "", false)
	}
}

// The soak section of docs/benchmarks.md sits between these markers; a
// doc without them gets the section appended.
const (
	soakBegin = "<!-- soak:begin -->"
	soakEnd   = "<!-- soak:end -->"
)

// writeSoakReport rewrites doc's soak section from the results file.
func writeSoakReport(path, doc string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r soakResults
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(doc, []byte(replaceSection(string(text), soakBegin, soakEnd, soakSection(&r))), 0o644)
}

func soakSection(r *soakResults) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("Last run: %s, %s, %d clients, %d workers, %.0f s, live heap sampled every %.0f s, `metadata_cache_bytes` %d MiB;\n",
		r.Started, r.Version, r.Clients, r.Workers, r.DurationSeconds, r.SampleSeconds, r.CacheBytes>>20)
	p("load average %.2f at the start, %.2f at the end (1-minute, %.2f on average over the run).\n\n", r.LoadavgStart[0], r.Loadavg[0], r.LoadavgMean)
	p("| process | live heap start → end (peak), MB | slope, MB/min | slope over the second half, MB/min | live heap at rest after, MB | RSS start → end, MB | RSS slope over the second half, MB/min |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, ps := range r.Processes {
		p("| %s | %.0f → %.0f (%.0f) | %+.2f | %+.2f | %.0f | %.0f → %.0f | %+.2f |\n", ps.Name, ps.StartHeapMB, ps.EndHeapMB, ps.PeakHeapMB,
			ps.SlopeMBPerMin, ps.LateSlopeMBPerMin, ps.RestHeapMB, ps.StartRSSMB, ps.EndRSSMB, ps.RSSSlopeMBPerMin)
	}
	p("\n")
	var kinds []string
	for k := range r.Ops {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Ops[k]))
	}
	p("Answered: %s; the written table had %s snapshots at the end.", strings.Join(parts, ", "), r.Snapshots)
	if len(r.Errors) == 0 {
		p(" No errors.\n")
	} else {
		var errs []string
		for k, n := range r.Errors {
			errs = append(errs, fmt.Sprintf("%s ×%d", k, n))
		}
		slices.Sort(errs)
		p(" Errors: %s.\n", strings.Join(errs, ", "))
	}
	if len(r.Wrong) > 0 {
		p("\n**Wrong answers:** %v\n", r.Wrong)
	}
	return b.String()
}
