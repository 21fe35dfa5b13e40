// Package cachestats is the registry of a process's caches: each cache
// registers a Source, and the Prometheus metrics (internal/metrics), the
// workers' stats action and system.runtime.caches read every registered
// cache through it, so a new cache shows up everywhere by registering
// once.
package cachestats
