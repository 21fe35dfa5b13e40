package membudget

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// How a process's budget splits (docs/operations.md "Memory"): half for
// DuckDB, a quarter for the Go-side Arrow buffers the accounts count, and
// the rest for the Go runtime's other heap (gRPC buffers, table metadata,
// stacks). DuckDB's half bounds everything DuckDB allocates in the process
// (engine.SetHeapLimit); three quarters of it are its instances'
// memory_limit, where the buffer managers spill, and the last quarter is
// for what DuckDB allocates outside its buffer manager (the vectors and
// lists an expression fills, the values constant folding makes). The Go
// runtime's soft limit is set to the Go half, so the garbage collector
// returns freed Arrow buffers before the process passes it.
const (
	duckPercent  = 50
	arrowPercent = 25
	// bufferQuarters of the DuckDB share are the instances' memory_limit.
	bufferQuarters = 3
	// plannerEighths of the DuckDB share go to a coordinator's planner
	// when workers share its process (serve); the workers split the rest.
	plannerEighths = 2
	// DefaultPercent of the machine's memory (or the cgroup's limit) is
	// the default budget.
	DefaultPercent = 75
	// MinBudget is the smallest budget: each DuckDB needs 16 MiB.
	MinBudget = 256 << 20
)

// Shares is how one process's budget splits.
type Shares struct {
	// Budget is the whole.
	Budget int64
	// Engine bounds what the process's DuckDB instances allocate together,
	// inside their buffer managers and outside (engine.SetHeapLimit).
	Engine int64
	// Planner is the memory_limit of the coordinator's DuckDB (0 without
	// a coordinator); Worker each worker's.
	Planner, Worker int64
	// PlannerTemp and WorkerTemp are their max_temp_directory_size.
	PlannerTemp, WorkerTemp int64
	// Arrow is the Go-side Arrow buffers' limit; Query each query's.
	Arrow, Query int64
	// GoLimit is the Go runtime's soft memory limit.
	GoLimit int64
}

// Split divides budget (and temp, the spill disk of the process) between a
// coordinator (when coordinator is set) and workers DuckDB instances, and
// the Go side. query is the per-query limit of Go-side buffers; 0 means
// half the Arrow share.
func Split(budget, temp, query int64, coordinator bool, workers int) Shares {
	s := Shares{Budget: budget, Arrow: budget * arrowPercent / 100}
	s.GoLimit = budget - budget*duckPercent/100
	s.Engine = budget * duckPercent / 100
	duck := s.Engine * bufferQuarters / 4
	switch {
	case coordinator && workers > 0:
		s.Planner = duck * plannerEighths / 8
		s.Worker = (duck - s.Planner) / int64(workers)
		s.PlannerTemp = temp * plannerEighths / 8
		s.WorkerTemp = (temp - s.PlannerTemp) / int64(workers)
	case coordinator:
		s.Planner, s.PlannerTemp = duck, temp
	case workers > 0:
		s.Worker = duck / int64(workers)
		s.WorkerTemp = temp / int64(workers)
	}
	s.Query = query
	if s.Query == 0 {
		s.Query = s.Arrow / 2
	}
	return s
}

// Default is DefaultPercent of Machine, at least MinBudget.
func Default() int64 {
	return max(Machine()*DefaultPercent/100, MinBudget)
}

// Machine is the memory the process may use: the machine's, or its
// cgroup's limit when lower (cgroup v2 memory.max, or v1's
// memory.limit_in_bytes).
func Machine() int64 {
	total := memTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	if total == 0 {
		total = 4 << 30 // unknown: a small machine
	}
	return total
}

// memTotal is MemTotal of /proc/meminfo in bytes, 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
