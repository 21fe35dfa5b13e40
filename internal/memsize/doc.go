// Package memsize measures what a Go value holds on the heap: the
// allocations reachable from it, each rounded up to the allocator's size
// class, counted once however many references reach it. Caches count
// their entries with it, so a bound in bytes is a bound on the memory the
// entries keep alive rather than on a proxy such as their encoded length.
//
// It is an estimate, held against the runtime's own counters by the
// tests: maps are sized from their length (Go's swiss tables, at their
// load factor), closures and unsafe pointers other than sync/atomic's
// Pointer are not followed, and memory shared with values outside the
// measured one is counted as the measured value's.
package memsize
