package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/queryreg"
)

// Buckets of the latency histograms, in seconds: 1 ms to about 5 minutes.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2.5, 14)

// endpointBuckets of the endpoints-per-query histogram.
var endpointBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}

// CoordinatorSources are what a coordinator's gauges read at scrape time.
type CoordinatorSources struct {
	// Active counts the statements not ended, by state.
	Active func() map[queryreg.State]int
	// Queued is how many statements wait for a slot.
	Queued func() int
	// Running is how many statements hold a slot.
	Running func() int
	// Workers counts the known workers by health (live, draining, …).
	Workers func() map[string]int
	// Commits are the planner's commit counters.
	Commits func() (attempts, conflicts, retries, written int64)
	// Cache reads the coordinator's metadata cache's counters.
	Cache func() CacheStats
	// Caches are all the coordinator's caches (icefloe_cache_* metrics).
	Caches *cachestats.Registry
}

// CacheStats are a coordinator's metadata cache counters: table metadata,
// manifest lists and manifests (files), memoised plans and binds (memos).
type CacheStats struct {
	MetadataHits, MetadataMisses uint64
	FileHits, FileMisses         uint64
	MemoHits, MemoMisses         uint64
	Entries                      int
	Bytes, MaxBytes              int64
	Evictions                    uint64
}

// Coordinator holds a coordinator's metrics.
type Coordinator struct {
	queries    *prometheus.CounterVec
	queue      prometheus.Histogram
	plan       prometheus.Histogram
	duration   *prometheus.HistogramVec
	endpoints  prometheus.Histogram
	rowsOut    prometheus.Counter
	bytesOut   prometheus.Counter
	rowsUpdate prometheus.Counter
}

// NewCoordinator registers a coordinator's metrics on reg.
func NewCoordinator(reg prometheus.Registerer, src CoordinatorSources) *Coordinator {
	c := &Coordinator{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icefloe_queries_total",
			Help: "Statements ended, by kind (query, update, ingest, prepare), strategy, outcome (finished, failed, cancelled) and gRPC code."},
			[]string{"kind", "strategy", "outcome", "code"}),
		queue: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icefloe_query_queue_seconds",
			Help: "Time statements waited for a statement slot.", Buckets: latencyBuckets}),
		plan: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icefloe_query_plan_seconds",
			Help: "Time statements spent planning (updates: running) on the coordinator.", Buckets: latencyBuckets}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icefloe_query_duration_seconds",
			Help: "Time from a statement's arrival until it ended (queries: until their endpoints were read), by kind.", Buckets: latencyBuckets},
			[]string{"kind"}),
		endpoints: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icefloe_query_endpoints",
			Help: "Endpoints per planned query.", Buckets: endpointBuckets}),
		rowsOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_query_result_rows_total",
			Help: "Result rows of the queries that ended, as their workers reported them."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_query_result_bytes_total",
			Help: "Result bytes (Arrow IPC bodies) of the queries that ended, as their workers reported them."}),
		rowsUpdate: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_rows_written_total",
			Help: "Rows the updates and ingests that ended wrote (their update counts)."}),
	}
	reg.MustRegister(c.queries, c.queue, c.plan, c.duration, c.endpoints, c.rowsOut, c.bytesOut, c.rowsUpdate)
	reg.MustRegister(coordinatorGauges{src: src, descs: newCoordinatorDescs()})
	NewCaches(reg, "coordinator").Add(src.Caches)
	return c
}

// Ended records one ended statement; pass it as queryreg.Options.Ended.
func (c *Coordinator) Ended(i queryreg.Info) {
	if c == nil {
		return
	}
	strategy := i.Strategy
	if strategy == "" {
		strategy = "none"
	}
	code := i.Code
	if code == "" {
		code = "OK"
	}
	c.queries.WithLabelValues(i.Kind, strategy, string(i.State), code).Inc()
	c.queue.Observe(i.QueueWait.Seconds())
	c.plan.Observe(i.PlanTime.Seconds())
	c.duration.WithLabelValues(i.Kind).Observe(i.Elapsed().Seconds())
	if i.EndpointsTotal > 0 {
		c.endpoints.Observe(float64(i.EndpointsTotal))
		c.rowsOut.Add(float64(i.Rows))
		c.bytesOut.Add(float64(i.Bytes))
	} else if i.Rows > 0 && i.State == queryreg.Finished {
		c.rowsUpdate.Add(float64(i.Rows))
	}
}

type coordinatorDescs struct {
	active, queued, running, workers, attempts, conflicts, retries, written *prometheus.Desc

	cacheHits, cacheMisses, cacheEntries, cacheBytes, cacheMax, cacheEvictions *prometheus.Desc
}

func newCoordinatorDescs() coordinatorDescs {
	return coordinatorDescs{
		active:  prometheus.NewDesc("icefloe_queries_active", "Statements not ended, by state (queued, planning, running).", []string{"state"}, nil),
		queued:  prometheus.NewDesc("icefloe_queued_queries", "Statements waiting for a statement slot (the autoscaling signal).", nil, nil),
		running: prometheus.NewDesc("icefloe_running_statements", "Statements holding a statement slot.", nil, nil),
		workers: prometheus.NewDesc("icefloe_workers", "Workers the coordinator knows, by health as it sees it (live, draining, unhealthy, refused, unknown).",
			[]string{"health"}, nil),
		attempts:  prometheus.NewDesc("icefloe_commit_attempts_total", "Commits sent to a catalog, retries included.", nil, nil),
		conflicts: prometheus.NewDesc("icefloe_commit_conflicts_total", "Commits that lost a race to, or conflicted with, a concurrent commit.", nil, nil),
		retries:   prometheus.NewDesc("icefloe_commit_retries_total", "Commit attempts after the first of one statement's commit.", nil, nil),
		written:   prometheus.NewDesc("icefloe_bytes_written_total", "Bytes of the data and delete files that committed snapshots added.", nil, nil),

		cacheHits: prometheus.NewDesc("icefloe_coordinator_cache_hits_total",
			"Reads the coordinator's metadata cache served, by what (metadata: table metadata; files: manifest lists and manifests; memos: plans and binds).", []string{"cache"}, nil),
		cacheMisses: prometheus.NewDesc("icefloe_coordinator_cache_misses_total",
			"Reads the coordinator's metadata cache made from storage (or computed), by what (metadata, files, memos).", []string{"cache"}, nil),
		cacheEntries:   prometheus.NewDesc("icefloe_coordinator_cache_entries", "Entries the coordinator's metadata cache holds.", nil, nil),
		cacheBytes:     prometheus.NewDesc("icefloe_coordinator_cache_bytes", "Bytes the coordinator's metadata cache holds (measured).", nil, nil),
		cacheMax:       prometheus.NewDesc("icefloe_coordinator_cache_max_bytes", "The bound of the coordinator's metadata cache.", nil, nil),
		cacheEvictions: prometheus.NewDesc("icefloe_coordinator_cache_evictions_total", "Entries the coordinator's metadata cache dropped to stay within its bound.", nil, nil),
	}
}

// coordinatorGauges reads the sources at scrape time.
type coordinatorGauges struct {
	src   CoordinatorSources
	descs coordinatorDescs
}

func (g coordinatorGauges) Describe(ch chan<- *prometheus.Desc) {
	d := g.descs
	for _, x := range []*prometheus.Desc{d.active, d.queued, d.running, d.workers, d.attempts, d.conflicts, d.retries, d.written,
		d.cacheHits, d.cacheMisses, d.cacheEntries, d.cacheBytes, d.cacheMax, d.cacheEvictions} {
		ch <- x
	}
}

func (g coordinatorGauges) Collect(ch chan<- prometheus.Metric) {
	d, s := g.descs, g.src
	if s.Active != nil {
		n := s.Active()
		for _, st := range []queryreg.State{queryreg.Queued, queryreg.Planning, queryreg.Running} {
			ch <- prometheus.MustNewConstMetric(d.active, prometheus.GaugeValue, float64(n[st]), string(st))
		}
	}
	if s.Queued != nil {
		ch <- prometheus.MustNewConstMetric(d.queued, prometheus.GaugeValue, float64(s.Queued()))
	}
	if s.Running != nil {
		ch <- prometheus.MustNewConstMetric(d.running, prometheus.GaugeValue, float64(s.Running()))
	}
	if s.Workers != nil {
		n := s.Workers()
		for _, h := range []string{"live", "draining", "unhealthy", "refused", "unknown"} {
			ch <- prometheus.MustNewConstMetric(d.workers, prometheus.GaugeValue, float64(n[h]), h)
		}
	}
	if s.Commits != nil {
		a, c, r, w := s.Commits()
		ch <- prometheus.MustNewConstMetric(d.attempts, prometheus.CounterValue, float64(a))
		ch <- prometheus.MustNewConstMetric(d.conflicts, prometheus.CounterValue, float64(c))
		ch <- prometheus.MustNewConstMetric(d.retries, prometheus.CounterValue, float64(r))
		ch <- prometheus.MustNewConstMetric(d.written, prometheus.CounterValue, float64(w))
	}
	if s.Cache != nil {
		c, counter, gauge := s.Cache(), prometheus.CounterValue, prometheus.GaugeValue
		for _, k := range []struct {
			name         string
			hits, misses uint64
		}{{"metadata", c.MetadataHits, c.MetadataMisses}, {"files", c.FileHits, c.FileMisses}, {"memos", c.MemoHits, c.MemoMisses}} {
			ch <- prometheus.MustNewConstMetric(d.cacheHits, counter, float64(k.hits), k.name)
			ch <- prometheus.MustNewConstMetric(d.cacheMisses, counter, float64(k.misses), k.name)
		}
		ch <- prometheus.MustNewConstMetric(d.cacheEntries, gauge, float64(c.Entries))
		ch <- prometheus.MustNewConstMetric(d.cacheBytes, gauge, float64(c.Bytes))
		ch <- prometheus.MustNewConstMetric(d.cacheMax, gauge, float64(c.MaxBytes))
		ch <- prometheus.MustNewConstMetric(d.cacheEvictions, counter, float64(c.Evictions))
	}
}
