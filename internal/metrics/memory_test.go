package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membudget"
)

func TestRegisterBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := membudget.New(1<<20, 0, nil)
	RegisterBudget(reg, b)
	a := b.Account("q")
	defer a.Close()
	a.Free(a.Allocate(4096))
	buf := a.Allocate(1024)
	defer a.Free(buf)
	want := `
# HELP icefloe_arrow_memory_bytes Go-side Arrow buffers the process's queries hold, counted against limits.memory_budget.
# TYPE icefloe_arrow_memory_bytes gauge
icefloe_arrow_memory_bytes 1024
# HELP icefloe_arrow_memory_limit_bytes The process's share of limits.memory_budget for Go-side Arrow buffers.
# TYPE icefloe_arrow_memory_limit_bytes gauge
icefloe_arrow_memory_limit_bytes 1.048576e+06
# HELP icefloe_arrow_memory_peak_bytes The most Go-side Arrow buffers the process's queries held at once.
# TYPE icefloe_arrow_memory_peak_bytes gauge
icefloe_arrow_memory_peak_bytes 4096
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// TestRegisterHeap: the gauges of DuckDB's heap read engine.Heap, its
// limit included.
func TestRegisterHeap(t *testing.T) {
	if err := engine.SetHeapLimit(3 << 30); err != nil {
		t.Fatal(err)
	}
	defer engine.SetHeapLimit(0)
	reg := prometheus.NewRegistry()
	RegisterHeap(reg)
	want := `
# HELP icefloe_duckdb_heap_limit_bytes The process's share of limits.memory_budget for DuckDB: an allocation past it fails its statement.
# TYPE icefloe_duckdb_heap_limit_bytes gauge
icefloe_duckdb_heap_limit_bytes 3.221225472e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "icefloe_duckdb_heap_limit_bytes"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 4 {
		t.Fatalf("%d metrics, %v", n, err)
	}
}
