package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membudget"
)

// RegisterBudget registers the gauges of a process's budget of Go-side
// Arrow buffers: what its accounts hold now, the most they held, and the
// limit.
func RegisterBudget(reg prometheus.Registerer, b *membudget.Budget) {
	reg.MustRegister(
		gauge("icefloe_arrow_memory_bytes", "Go-side Arrow buffers the process's queries hold, counted against limits.memory_budget.", b.Used),
		gauge("icefloe_arrow_memory_peak_bytes", "The most Go-side Arrow buffers the process's queries held at once.", b.Peak),
		gauge("icefloe_arrow_memory_limit_bytes", "The process's share of limits.memory_budget for Go-side Arrow buffers.", b.Limit),
	)
}

// RegisterHeap registers the gauges of DuckDB's heap in the process
// (engine.Heap): what all its instances hold, inside their buffer
// managers and outside, the most they held, the limit, and the
// allocations refused for it.
func RegisterHeap(reg prometheus.Registerer) {
	heap := func(f func(engine.HeapStats) int64) func() int64 { return func() int64 { return f(engine.Heap()) } }
	reg.MustRegister(
		gauge("icefloe_duckdb_heap_bytes", "Memory the process's DuckDB instances allocated, in their buffer managers and outside, counted against limits.memory_budget.",
			heap(func(h engine.HeapStats) int64 { return h.Used })),
		gauge("icefloe_duckdb_heap_peak_bytes", "The most memory the process's DuckDB instances held at once.",
			heap(func(h engine.HeapStats) int64 { return h.Peak })),
		gauge("icefloe_duckdb_heap_limit_bytes", "The process's share of limits.memory_budget for DuckDB: an allocation past it fails its statement.",
			heap(func(h engine.HeapStats) int64 { return h.Limit })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "icefloe_duckdb_heap_refused_total",
			Help: "DuckDB allocations refused because they would have taken its memory past icefloe_duckdb_heap_limit_bytes."},
			func() float64 { return float64(engine.Heap().Refused) }),
	)
}

func gauge(name, help string, f func() int64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
}
