package main

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// results is the JSON of a run.
type results struct {
	Started   string   `json:"started"`
	Version   string   `json:"version"`
	CPUs      int      `json:"cpus"`
	MemoryGiB float64  `json:"memory_gib"`
	Workers   int      `json:"workers"`
	Clients   int      `json:"clients"`
	Duration  float64  `json:"phase_seconds"`
	Processes []string `json:"processes"`
	Config    struct {
		Coordinator string `json:"coordinator"`
		Worker      string `json:"worker"`
		CrossClient string `json:"cross_client_statement_timeout"`
	} `json:"config"`
	Dataset struct {
		Path        string             `json:"path"`
		Orders      int64              `json:"orders"`
		Lineitem    int64              `json:"lineitem"`
		LoadSeconds map[string]float64 `json:"load_seconds"`
	} `json:"dataset"`
	Mix     map[string]int `json:"mix_weights"`
	Phases  []*phase       `json:"phases"`
	Inserts insertCheck    `json:"inserts"`
	// AloneInsert times one-row INSERTs with nothing else running, before
	// the phases and after them.
	AloneInsert [2]alone `json:"insert_alone_before_after"`
	Failed      string   `json:"failed,omitempty"` // a wrong answer, a lost or doubled INSERT
}

type phase struct {
	Name           string                       `json:"name"`
	Clients        int                          `json:"clients"`
	CrossClient    bool                         `json:"cross_client"`
	ElapsedSeconds float64                      `json:"elapsed_seconds"`       // first call to the last answer of a mixed client
	CrossSeconds   float64                      `json:"cross_elapsed_seconds"` // … of the cross-join client
	Kinds          map[string]*kindResult       `json:"kinds"`
	Overall        *kindResult                  `json:"overall"`         // the mixed clients
	Cross          *kindResult                  `json:"cross,omitempty"` // the cross-join client
	CrossAttempts  []attempt                    `json:"cross_attempts,omitempty"`
	PeakRSSMiB     map[string]int64             `json:"peak_rss_mib"` // sampled VmRSS every 250 ms
	HWMMiB         map[string]int64             `json:"vmhwm_mib"`    // VmHWM at the end (reset at the start when HWMReset)
	HWMReset       bool                         `json:"vmhwm_reset"`
	RSSSeriesMiB   map[string][]int64           `json:"rss_series_mib"`
	Goroutines     map[string][2]goroutineCount `json:"goroutines_before_after"`
	SettledSeconds float64                      `json:"goroutines_settled_seconds"`
	// Coordinator are coordinatorCounters' growth over the phase.
	Coordinator         map[string]float64 `json:"coordinator_metrics"`
	WorkersLeftPlanning int                `json:"workers_left_planning"` // times, as the coordinator logged it
	LoadavgStart        [3]float64         `json:"loadavg_start"`
	LoadavgEnd          [3]float64         `json:"loadavg_end"`
	Loadavg1m           struct {
		Min  float64 `json:"min"`
		Mean float64 `json:"mean"`
		Max  float64 `json:"max"`
	} `json:"loadavg_1m"`
}

type kindResult struct {
	Ops        int                `json:"ops"` // answered right
	PerSecond  float64            `json:"per_second"`
	P50ms      float64            `json:"p50_ms"`
	P99ms      float64            `json:"p99_ms"`
	MaxMs      float64            `json:"max_ms"`
	Errors     map[string]int     `json:"errors"`
	ErrorSeen  map[string]string  `json:"error_samples,omitempty"`
	ByQuery    map[string]int     `json:"errors_by_query,omitempty"`
	Queries    map[string]latency `json:"queries,omitempty"` // the answered ones, by query
	Wrong      int                `json:"wrong"`
	WrongFirst string             `json:"wrong_first,omitempty"`
}

type alone struct {
	P50ms     float64 `json:"p50_ms"`
	MaxMs     float64 `json:"max_ms"`
	Snapshots string  `json:"snapshots_after"`
}

type latency struct {
	Ops   int     `json:"ops"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

type insertCheck struct {
	Acked              int `json:"acknowledged"`
	Failed             int `json:"failed"`
	Rows               int `json:"rows"`
	Lost               int `json:"lost"`    // acknowledged, not in the table
	Doubled            int `json:"doubled"` // in the table more than once
	FailedButCommitted int `json:"failed_but_committed"`
	Unknown            int `json:"unknown"` // in the table, never sent
	DataFiles          int `json:"data_files"`
	StrayFiles         int `json:"stray_data_files"` // in the table's data folder, not in the table
}

func newResults(bin, data string, clients, workers int, duration time.Duration) *results {
	r := &results{Started: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Version: version(bin), CPUs: runtime.NumCPU(),
		MemoryGiB: memTotalGiB(), Workers: workers, Clients: clients, Duration: duration.Seconds(), Mix: map[string]int{}}
	r.Config.Coordinator, r.Config.Worker, r.Config.CrossClient = limitsConfig, workerMemoryConfig+limitsConfig, crossTimeout
	r.Dataset.Path = data
	for _, m := range mixWeights {
		r.Mix[m.kind] = m.weight
	}
	return r
}

// finish sets Failed when any answer was wrong or an INSERT was lost or
// doubled.
func (r *results) finish() {
	var bad []string
	for _, ph := range r.Phases {
		for k, kr := range ph.Kinds {
			if kr.Wrong > 0 {
				bad = append(bad, fmt.Sprintf("%s: %d wrong %s answers (%s)", ph.Name, kr.Wrong, k, kr.WrongFirst))
			}
		}
		if ph.Cross != nil && ph.Cross.Wrong > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d wrong cross-join answers (%s)", ph.Name, ph.Cross.Wrong, ph.Cross.WrongFirst))
		}
	}
	if r.Inserts.Lost > 0 || r.Inserts.Doubled > 0 || r.Inserts.Unknown > 0 {
		bad = append(bad, fmt.Sprintf("INSERTs: %d acknowledged and lost, %d doubled, %d never sent", r.Inserts.Lost, r.Inserts.Doubled, r.Inserts.Unknown))
	}
	r.Failed = strings.Join(bad, "; ")
}

func memTotalGiB() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return float64(int(kb/(1<<20)*10)) / 10
		}
	}
	return 0
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summarize merges tallies into one kindResult over elapsed seconds.
func summarize(elapsed float64, ts ...*tally) *kindResult {
	kr := &kindResult{Errors: map[string]int{}, ErrorSeen: map[string]string{}, ByQuery: map[string]int{}, Queries: map[string]latency{}}
	var all []time.Duration
	for _, t := range ts {
		all = append(all, t.durations...)
		for c, n := range t.errors {
			kr.Errors[c] += n
			if _, ok := kr.ErrorSeen[c]; !ok {
				kr.ErrorSeen[c] = t.samples[c]
			}
		}
		for q, n := range t.byQuery {
			kr.ByQuery[q] += n
		}
		for q, ds := range t.perQuery {
			ds = slices.Sorted(slices.Values(ds))
			kr.Queries[q] = latency{Ops: len(ds), P50ms: ms(percentile(ds, 50)), P99ms: ms(percentile(ds, 99))}
		}
		kr.Wrong += t.wrong
		if kr.WrongFirst == "" {
			kr.WrongFirst = t.wrongSeen
		}
	}
	slices.Sort(all)
	kr.Ops = len(all)
	kr.PerSecond = float64(len(all)) / elapsed
	kr.P50ms, kr.P99ms = ms(percentile(all, 50)), ms(percentile(all, 99))
	if len(all) > 0 {
		kr.MaxMs = ms(all[len(all)-1])
	}
	return kr
}

// fill sets the phase's figures from its tallies and samples.
func (ph *phase) fill(start time.Time, tallies map[string]*tally, s *sampler, c *cluster) {
	ph.Kinds = map[string]*kindResult{}
	var mixed []*tally
	var last time.Time
	for _, m := range mixWeights {
		mixed = append(mixed, tallies[m.kind])
		if tallies[m.kind].last.After(last) {
			last = tallies[m.kind].last
		}
	}
	ph.ElapsedSeconds = last.Sub(start).Seconds()
	for _, t := range mixed {
		ph.Kinds[t.kind] = summarize(ph.ElapsedSeconds, t)
	}
	ph.Overall = summarize(ph.ElapsedSeconds, mixed...)
	if ph.CrossClient {
		ph.CrossSeconds = tallies[kindCross].last.Sub(start).Seconds()
		ph.Cross = summarize(ph.CrossSeconds, tallies[kindCross])
		ph.CrossAttempts = tallies[kindCross].attempts
	}
	ph.PeakRSSMiB, ph.HWMMiB, ph.RSSSeriesMiB = map[string]int64{}, map[string]int64{}, s.series
	for n, b := range s.peak {
		ph.PeakRSSMiB[n] = b >> 20
	}
	for _, p := range c.procs() {
		if _, hwm, err := procStatus(p.pid()); err == nil {
			ph.HWMMiB[p.name] = hwm >> 20
		}
	}
	if len(s.loadavg) > 0 {
		la := s.loadavg
		ph.Loadavg1m.Min, ph.Loadavg1m.Max = slices.Min(la), slices.Max(la)
		sum := 0.0
		for _, x := range la {
			sum += x
		}
		ph.Loadavg1m.Mean = sum / float64(len(la))
	}
}

func logPhase(ph *phase) {
	for _, k := range append(slices.Sorted(maps.Keys(ph.Kinds)), "overall", "cross") {
		kr := ph.Kinds[k]
		switch k {
		case "overall":
			kr = ph.Overall
		case "cross":
			kr = ph.Cross
		}
		if kr == nil {
			continue
		}
		logf("  %-10s %6d ok %7.1f/s p50 %8.1f ms p99 %8.1f ms errors %v wrong %d", k, kr.Ops, kr.PerSecond, kr.P50ms, kr.P99ms, kr.Errors, kr.Wrong)
	}
	logf("  peak RSS MiB %v, VmHWM MiB %v, goroutines before/after %v, load %.1f–%.1f", ph.PeakRSSMiB, ph.HWMMiB,
		ph.Goroutines, ph.Loadavg1m.Min, ph.Loadavg1m.Max)
}
