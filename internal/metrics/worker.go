package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/wire"
)

// WorkerSource is what one worker's gauges read at scrape time: its
// counters and its DuckDB's memory and spill bytes.
type WorkerSource struct {
	Stats  func() wire.WorkerStats
	DuckDB func(ctx context.Context) (memory, temp int64, err error)
	// MemoryLimit is its DuckDB's memory_limit in bytes.
	MemoryLimit int64
	// Data reads its data cache's counters; nil without one.
	Data func() datacache.Stats
	// Caches are all its caches (icefloe_cache_* metrics).
	Caches *cachestats.Registry
}

// Worker holds the metrics of a process's workers: `serve` runs several
// in one process and they add up.
type Worker struct {
	tickets    *prometheus.CounterVec
	rows       *prometheus.CounterVec
	bytes      *prometheus.CounterVec
	fragment   *prometheus.HistogramVec
	firstBatch prometheus.Histogram
	yielded    prometheus.Counter
	readFiles  prometheus.Counter
	readBytes  prometheus.Counter

	mu      sync.Mutex
	sources []WorkerSource
	// caches exports the workers' cachestats registries.
	caches *Caches
}

// Ticket kinds.
const (
	TicketEndpoint = "endpoint" // a client (or the coordinator's proxy) reads it
	TicketChild    = "child"    // a peer worker pulls it
	TicketWrite    = "write"    // a write fragment or ingest share
)

// NewWorker registers the workers' metrics on reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	w := &Worker{
		tickets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icefloe_worker_tickets_total",
			Help: "Tickets the workers served, by kind (endpoint, child, write) and gRPC code."}, []string{"kind", "code"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icefloe_worker_streamed_rows_total",
			Help: "Rows the workers streamed, by ticket kind."}, []string{"kind"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icefloe_worker_streamed_bytes_total",
			Help: "Bytes (Arrow IPC bodies) the workers streamed, by ticket kind."}, []string{"kind"}),
		fragment: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icefloe_worker_fragment_seconds",
			Help: "Time the workers took to serve a ticket, by kind.", Buckets: latencyBuckets}, []string{"kind"}),
		firstBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "icefloe_worker_first_batch_seconds",
			Help: "Time from a ticket's arrival to its first record batch on the wire.", Buckets: latencyBuckets}),
		yielded: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_worker_yielded_fragments_total",
			Help: "Fragments that ran out of DuckDB's memory or spill while older queries ran, waited for them and ran again."}),
		readFiles: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_worker_read_files_total",
			Help: "Data files the workers' tickets read (counted when a ticket ended without error)."}),
		readBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "icefloe_worker_read_bytes_total",
			Help: "Bytes of the data files the workers' tickets read (counted when a ticket ended without error)."}),
	}
	reg.MustRegister(w.tickets, w.rows, w.bytes, w.fragment, w.firstBatch, w.yielded, w.readFiles, w.readBytes, workerGauges{w: w, d: newWorkerDescs()})
	w.caches = NewCaches(reg, "worker")
	return w
}

// Add makes the gauges read one more worker.
func (w *Worker) Add(src WorkerSource) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sources = append(w.sources, src)
	w.caches.Add(src.Caches)
}

// Served records one ticket served: its kind, gRPC code, rows and bytes
// sent, how long it took and when its first batch left (zero: none did).
func (w *Worker) Served(kind, code string, rows, bytes int64, took, firstBatch time.Duration) {
	if w == nil {
		return
	}
	w.tickets.WithLabelValues(kind, code).Inc()
	w.rows.WithLabelValues(kind).Add(float64(rows))
	w.bytes.WithLabelValues(kind).Add(float64(bytes))
	w.fragment.WithLabelValues(kind).Observe(took.Seconds())
	if firstBatch > 0 {
		w.firstBatch.Observe(firstBatch.Seconds())
	}
}

// Read records the data files (and their bytes) a ticket read.
func (w *Worker) Read(files, bytes int64) {
	if w != nil {
		w.readFiles.Add(float64(files))
		w.readBytes.Add(float64(bytes))
	}
}

// Yielded records a fragment that waited for older queries to free
// DuckDB's memory or spill and ran again (worker/yield.go).
func (w *Worker) Yielded() {
	if w != nil {
		w.yielded.Inc()
	}
}

type workerDescs struct {
	streams, running, queued, hits, misses, entries, cacheBytes, evictions, duckMem, duckTemp, duckLimit         *prometheus.Desc
	dataHits, dataMisses, dataFetched, dataHitBytes, dataEntries, dataBytes, dataMax, dataEvictions, dataInvalid *prometheus.Desc
}

func newWorkerDescs() workerDescs {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return workerDescs{
		streams:    d("icefloe_worker_active_streams", "DoGet streams in flight on the workers."),
		running:    d("icefloe_worker_running_fragments", "Fragments holding a fragment slot."),
		queued:     d("icefloe_worker_queued_fragments", "Fragments waiting for a fragment slot."),
		hits:       d("icefloe_metadata_cache_hits_total", "Table metadata opens the workers' metadata caches served without reading storage."),
		misses:     d("icefloe_metadata_cache_misses_total", "Table metadata reads the workers' metadata caches made."),
		entries:    d("icefloe_metadata_cache_entries", "Metadata versions cached."),
		cacheBytes: d("icefloe_metadata_cache_bytes", "Size of the cached metadata."),
		evictions:  d("icefloe_metadata_cache_evictions_total", "Metadata cache entries dropped to stay within the bound."),
		duckMem:    d("icefloe_duckdb_memory_bytes", "Memory DuckDB's buffer manager holds (duckdb_memory())."),
		duckTemp:   d("icefloe_duckdb_spill_bytes", "Bytes DuckDB spilled to its temporary directory (duckdb_memory())."),
		duckLimit:  d("icefloe_duckdb_memory_limit_bytes", "The memory_limit of the workers' DuckDB: the budget icefloe_duckdb_memory_bytes uses."),

		dataHits:      d("icefloe_data_cache_hits_total", "Object-store data file reads the workers' data caches served from a local copy."),
		dataMisses:    d("icefloe_data_cache_misses_total", "Object-store data file reads the workers' data caches fetched."),
		dataFetched:   d("icefloe_data_cache_fetched_bytes_total", "Bytes the workers' data caches read from object stores."),
		dataHitBytes:  d("icefloe_data_cache_hit_bytes_total", "Bytes the workers' data caches served from local copies."),
		dataEntries:   d("icefloe_data_cache_entries", "Data files the workers' data caches hold."),
		dataBytes:     d("icefloe_data_cache_bytes", "Bytes the workers' data caches hold on disk."),
		dataMax:       d("icefloe_data_cache_max_bytes", "The workers' data cache bounds."),
		dataEvictions: d("icefloe_data_cache_evictions_total", "Copies dropped to stay within the bound."),
		dataInvalid:   d("icefloe_data_cache_invalidations_total", "Copies dropped because the object changed underneath."),
	}
}

type workerGauges struct {
	w *Worker
	d workerDescs
}

func (g workerGauges) Describe(ch chan<- *prometheus.Desc) {
	d := g.d
	for _, x := range []*prometheus.Desc{d.streams, d.running, d.queued, d.hits, d.misses, d.entries, d.cacheBytes, d.evictions, d.duckMem, d.duckTemp, d.duckLimit,
		d.dataHits, d.dataMisses, d.dataFetched, d.dataHitBytes, d.dataEntries, d.dataBytes, d.dataMax, d.dataEvictions, d.dataInvalid} {
		ch <- x
	}
}

// duckTimeout bounds reading one worker's duckdb_memory() at a scrape.
const duckTimeout = 2 * time.Second

func (g workerGauges) Collect(ch chan<- prometheus.Metric) {
	g.w.mu.Lock()
	srcs := append([]WorkerSource(nil), g.w.sources...)
	g.w.mu.Unlock()
	var st wire.WorkerStats
	var mem, temp, limit int64
	var data datacache.Stats
	for _, s := range srcs {
		limit += s.MemoryLimit
		if s.Data != nil {
			x := s.Data()
			data.Hits, data.Misses, data.FetchedBytes, data.HitBytes = data.Hits+x.Hits, data.Misses+x.Misses, data.FetchedBytes+x.FetchedBytes, data.HitBytes+x.HitBytes
			data.Entries, data.Bytes, data.MaxBytes = data.Entries+x.Entries, data.Bytes+x.Bytes, data.MaxBytes+x.MaxBytes
			data.Evictions, data.Invalidations = data.Evictions+x.Evictions, data.Invalidations+x.Invalidations
		}
		x := s.Stats()
		st.Streams += x.Streams
		st.RunningFragments += x.RunningFragments
		st.QueuedFragments += x.QueuedFragments
		c := &st.Cache
		c.Hits, c.Misses, c.Entries = c.Hits+x.Cache.Hits, c.Misses+x.Cache.Misses, c.Entries+x.Cache.Entries
		c.Bytes, c.Evictions = c.Bytes+x.Cache.Bytes, c.Evictions+x.Cache.Evictions
		if s.DuckDB != nil {
			ctx, cancel := context.WithTimeout(context.Background(), duckTimeout)
			m, t, err := s.DuckDB(ctx)
			cancel()
			if err == nil {
				mem, temp = mem+m, temp+t
			}
		}
	}
	d, gauge, counter := g.d, prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(d.streams, gauge, float64(st.Streams))
	ch <- prometheus.MustNewConstMetric(d.running, gauge, float64(st.RunningFragments))
	ch <- prometheus.MustNewConstMetric(d.queued, gauge, float64(st.QueuedFragments))
	ch <- prometheus.MustNewConstMetric(d.hits, counter, float64(st.Cache.Hits))
	ch <- prometheus.MustNewConstMetric(d.misses, counter, float64(st.Cache.Misses))
	ch <- prometheus.MustNewConstMetric(d.entries, gauge, float64(st.Cache.Entries))
	ch <- prometheus.MustNewConstMetric(d.cacheBytes, gauge, float64(st.Cache.Bytes))
	ch <- prometheus.MustNewConstMetric(d.evictions, counter, float64(st.Cache.Evictions))
	ch <- prometheus.MustNewConstMetric(d.duckMem, gauge, float64(mem))
	ch <- prometheus.MustNewConstMetric(d.duckTemp, gauge, float64(temp))
	ch <- prometheus.MustNewConstMetric(d.duckLimit, gauge, float64(limit))
	ch <- prometheus.MustNewConstMetric(d.dataHits, counter, float64(data.Hits))
	ch <- prometheus.MustNewConstMetric(d.dataMisses, counter, float64(data.Misses))
	ch <- prometheus.MustNewConstMetric(d.dataFetched, counter, float64(data.FetchedBytes))
	ch <- prometheus.MustNewConstMetric(d.dataHitBytes, counter, float64(data.HitBytes))
	ch <- prometheus.MustNewConstMetric(d.dataEntries, gauge, float64(data.Entries))
	ch <- prometheus.MustNewConstMetric(d.dataBytes, gauge, float64(data.Bytes))
	ch <- prometheus.MustNewConstMetric(d.dataMax, gauge, float64(data.MaxBytes))
	ch <- prometheus.MustNewConstMetric(d.dataEvictions, counter, float64(data.Evictions))
	ch <- prometheus.MustNewConstMetric(d.dataInvalid, counter, float64(data.Invalidations))
}
