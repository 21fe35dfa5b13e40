package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
