package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icefloe/icefloe/internal/cachestats"
)

func TestCachesExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	coordinator, workers := NewCaches(reg, "coordinator"), NewCaches(reg, "worker")
	var coord, w1, w2 cachestats.Registry
	coord.Register(cachestats.Func(func() cachestats.Stats {
		return cachestats.Stats{Name: "plan", Hits: 3, Misses: 1, Entries: 1, Bytes: 10, MaxBytes: 100}
	}))
	view := cachestats.Func(func() cachestats.Stats { return cachestats.Stats{Name: "view", Hits: 2, Evictions: 1} })
	w1.Register(view)
	w2.Register(view)
	coordinator.Add(&coord)
	workers.Add(&w1)
	workers.Add(&w2)
	want := `
# HELP icefloe_cache_hits_total Lookups a cache answered, by cache and process.
# TYPE icefloe_cache_hits_total counter
icefloe_cache_hits_total{cache="plan",process="coordinator"} 3
icefloe_cache_hits_total{cache="view",process="worker"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "icefloe_cache_hits_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP icefloe_cache_evictions_total Entries a cache dropped to stay within its bound.
# TYPE icefloe_cache_evictions_total counter
icefloe_cache_evictions_total{cache="plan",process="coordinator"} 0
icefloe_cache_evictions_total{cache="view",process="worker"} 2
`), "icefloe_cache_evictions_total"); err != nil {
		t.Error(err)
	}
}
