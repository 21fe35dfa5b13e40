package engine

/*
#cgo CXXFLAGS: -std=c++17 -O2
#cgo LDFLAGS: -Wl,--wrap=duckdb_je_malloc -Wl,--wrap=duckdb_je_realloc -Wl,--wrap=duckdb_je_free
#include <stdint.h>
int icefloe_heap_set_limit(int64_t n);
int64_t icefloe_heap_limit(void);
int64_t icefloe_heap_used(void);
int64_t icefloe_heap_peak(void);
int64_t icefloe_heap_refused(void);
*/
import "C"

import (
	"fmt"
	"syscall"
)

// DuckDB's heap, bounded.
//
// DuckDB's memory_limit bounds its buffer manager only: the vectors an
// expression fills (range(1500000000) is one list of 12 GB), the strings
// a function builds, the values constant folding makes while a statement
// is bound, are allocated outside it, so one expression in client SQL
// could take the process past any limit. The linker sends every
// allocation of DuckDB's allocator (jemalloc, which its buffer manager,
// vectors and string heaps come from) and every operator new of 64 KiB or
// more through heap.cc, which counts them for the whole process and
// refuses one that would pass SetHeapLimit: DuckDB then fails the
// statement with its Out of Memory error (RESOURCE_EXHAUSTED, naming
// limits.memory_budget at the boundary), whichever function asked, and
// the process goes on. What allocates the memory does not matter, so no
// function is named anywhere; constant folding at bind time, which fails
// the same way, leaves the expression to run (and fail) later.

// SetHeapLimit bounds what DuckDB allocates in this process, all its
// databases together, to n bytes; 0 (the default) means no bound. With a
// bound, DuckDB's allocator also returns freed pages to the system at
// once, so the process's RSS follows the count. Set it once, before the
// first database opens.
func SetHeapLimit(n int64) error {
	if rc := C.icefloe_heap_set_limit(C.int64_t(max(n, 0))); rc != 0 {
		return fmt.Errorf("engine: bound DuckDB's heap: jemalloc: %w", syscall.Errno(rc))
	}
	return nil
}

// HeapStats is what DuckDB's heap counts.
type HeapStats struct {
	// Limit is SetHeapLimit's bound (0: none).
	Limit int64
	// Used is what DuckDB's allocator holds now plus the large blocks of
	// operator new; Peak the most it held.
	Used, Peak int64
	// Refused counts the allocations refused for the limit.
	Refused int64
}

// Heap reads the counts of DuckDB's heap.
func Heap() HeapStats {
	return HeapStats{
		Limit:   int64(C.icefloe_heap_limit()),
		Used:    int64(C.icefloe_heap_used()),
		Peak:    int64(C.icefloe_heap_peak()),
		Refused: int64(C.icefloe_heap_refused()),
	}
}
