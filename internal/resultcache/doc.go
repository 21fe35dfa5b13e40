// Package resultcache is the coordinator's exact result cache: the Arrow
// IPC bytes of a query's result, kept under a key that holds everything
// the answer depends on (the bound plan with its parameter values, the
// pinned metadata location and snapshot of every table it reads, the
// principal and its grants version, the session settings that change
// answers). The planner builds the key (planner/resultcache.go); this
// package only stores, bounds and counts.
//
// The cache is bounded by the bytes its entries hold, measured with
// internal/memsize, least recently used first out (hashicorp's
// golang-lru simplelru, which keeps the order; the byte bound is this
// package's). An entry never goes stale in place: a commit changes a
// table's metadata location, so a query after it builds another key and
// misses, whichever coordinator committed.
package resultcache
