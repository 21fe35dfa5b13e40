package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/cachestats"
)

// Caches exports every registered cache (internal/cachestats) of one
// kind of process by name: icefloe_cache_{hits,misses,evictions}_total
// and icefloe_cache_{entries,bytes,max_bytes}, labelled cache and process
// (coordinator or worker). Caches of one name on several workers of one
// process (`serve`) add up.
type Caches struct {
	descs cacheDescs
	mu    sync.Mutex
	regs  []*cachestats.Registry
}

// NewCaches registers the metrics of the caches of a process kind
// ("coordinator", "worker") on reg; nil reg returns nil (Add on nil does
// nothing).
func NewCaches(reg prometheus.Registerer, process string) *Caches {
	if reg == nil {
		return nil
	}
	c := &Caches{descs: newCacheDescs(process)}
	reg.MustRegister(c)
	return c
}

// Add exports r's caches too.
func (c *Caches) Add(r *cachestats.Registry) {
	if c == nil || r == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.regs = append(c.regs, r)
}

type cacheDescs struct {
	hits, misses, evictions, entries, bytes, max *prometheus.Desc
}

func newCacheDescs(process string) cacheDescs {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"cache"}, prometheus.Labels{"process": process})
	}
	return cacheDescs{
		hits:      d("icefloe_cache_hits_total", "Lookups a cache answered, by cache and process."),
		misses:    d("icefloe_cache_misses_total", "Lookups a cache could not answer, by cache and process."),
		evictions: d("icefloe_cache_evictions_total", "Entries a cache dropped to stay within its bound."),
		entries:   d("icefloe_cache_entries", "Entries a cache holds."),
		bytes:     d("icefloe_cache_bytes", "Bytes a cache holds."),
		max:       d("icefloe_cache_max_bytes", "A cache's bound in bytes (shared by the memo classes of one metadata cache)."),
	}
}

// Describe implements prometheus.Collector.
func (c *Caches) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, x := range []*prometheus.Desc{d.hits, d.misses, d.evictions, d.entries, d.bytes, d.max} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (c *Caches) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	var all cachestats.Registry
	for _, r := range c.regs {
		all.Register(cachestats.Funcs(r.Snapshot))
	}
	c.mu.Unlock()
	d, counter, gauge := c.descs, prometheus.CounterValue, prometheus.GaugeValue
	for _, s := range all.Snapshot() {
		ch <- prometheus.MustNewConstMetric(d.hits, counter, float64(s.Hits), s.Name)
		ch <- prometheus.MustNewConstMetric(d.misses, counter, float64(s.Misses), s.Name)
		ch <- prometheus.MustNewConstMetric(d.evictions, counter, float64(s.Evictions), s.Name)
		ch <- prometheus.MustNewConstMetric(d.entries, gauge, float64(s.Entries), s.Name)
		ch <- prometheus.MustNewConstMetric(d.bytes, gauge, float64(s.Bytes), s.Name)
		ch <- prometheus.MustNewConstMetric(d.max, gauge, float64(s.MaxBytes), s.Name)
	}
}
