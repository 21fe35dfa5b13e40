package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/resultcache"
)

// resultCacheGauges export the coordinator's result cache
// (internal/resultcache), read at scrape time.
type resultCacheGauges struct {
	stats                                         func() resultcache.Stats
	hits, misses, stores, evictions, entries, bts *prometheus.Desc
	max                                           *prometheus.Desc
}

// RegisterResultCache registers the result cache's counters on reg:
// hits, misses, results kept and evicted, entries and bytes held.
func RegisterResultCache(reg prometheus.Registerer, stats func() resultcache.Stats) {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	reg.MustRegister(resultCacheGauges{stats: stats,
		hits:      d("icefloe_result_cache_hits_total", "Queries answered from the result cache."),
		misses:    d("icefloe_result_cache_misses_total", "Queries the result cache had no result for (cacheable ones only)."),
		stores:    d("icefloe_result_cache_stores_total", "Results kept in the result cache."),
		evictions: d("icefloe_result_cache_evictions_total", "Results the result cache dropped for its byte bound."),
		entries:   d("icefloe_result_cache_entries", "Results the result cache holds."),
		bts:       d("icefloe_result_cache_bytes", "Bytes the result cache holds."),
		max:       d("icefloe_result_cache_max_bytes", "The result cache's byte bound."),
	})
}

func (g resultCacheGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.hits, g.misses, g.stores, g.evictions, g.entries, g.bts, g.max} {
		ch <- d
	}
}

func (g resultCacheGauges) Collect(ch chan<- prometheus.Metric) {
	s := g.stats()
	ch <- prometheus.MustNewConstMetric(g.hits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(g.misses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(g.stores, prometheus.CounterValue, float64(s.Stores))
	ch <- prometheus.MustNewConstMetric(g.evictions, prometheus.CounterValue, float64(s.Evictions))
	ch <- prometheus.MustNewConstMetric(g.entries, prometheus.GaugeValue, float64(s.Entries))
	ch <- prometheus.MustNewConstMetric(g.bts, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(g.max, prometheus.GaugeValue, float64(s.MaxBytes))
}
