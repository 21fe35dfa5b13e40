package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/internal/membudget"
)

// RegisterBudget registers the gauges of a process's budget of Go-side
// Arrow buffers: what its accounts hold now, the most they held, and the
// limit.
func RegisterBudget(reg prometheus.Registerer, b *membudget.Budget) {
	g := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
	}
	reg.MustRegister(
		g("icefloe_arrow_memory_bytes", "Go-side Arrow buffers the process's queries hold, counted against limits.memory_budget.", b.Used),
		g("icefloe_arrow_memory_peak_bytes", "The most Go-side Arrow buffers the process's queries held at once.", b.Peak),
		g("icefloe_arrow_memory_limit_bytes", "The process's share of limits.memory_budget for Go-side Arrow buffers.", b.Limit),
	)
}
