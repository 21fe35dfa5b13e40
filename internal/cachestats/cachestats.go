package cachestats

import (
	"slices"
	"strings"
	"sync"
)

// Stats are one cache's counters at one moment.
type Stats struct {
	// Name names the cache ("plan", "metadata", "data", …); unique within
	// a process.
	Name string `json:"name"`
	// Entries and Bytes are what it holds now.
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// MaxBytes bounds Bytes (0: not bounded by bytes); MaxEntries bounds
	// Entries (0: not bounded by count). A cache that shares its bound
	// with others (the memos of the metadata cache) reports the shared
	// bound.
	MaxBytes   int64 `json:"max_bytes"`
	MaxEntries int   `json:"max_entries"`
	// Hits and Misses count lookups; Evictions entries dropped to stay
	// within the bound.
	Hits      uint64 `json:"hits"`
	Misses    uint64 `json:"misses"`
	Evictions uint64 `json:"evictions"`
}

// Source is a cache that reports its counters. Stats must be safe to call
// concurrently with the cache's use.
type Source interface {
	Stats() []Stats
}

// Func adapts a function returning one cache's Stats to a Source.
type Func func() Stats

// Stats implements Source.
func (f Func) Stats() []Stats { return []Stats{f()} }

// Funcs adapts a function returning several caches' Stats to a Source.
type Funcs func() []Stats

// Stats implements Source.
func (f Funcs) Stats() []Stats { return f() }

// Registry holds a process's Sources. The zero value is ready; it is
// safe for concurrent use. A nil *Registry registers nothing and reports
// nothing.
type Registry struct {
	mu      sync.Mutex
	sources []Source
}

// Register adds src: its caches are reported from now on.
func (r *Registry) Register(src Source) {
	if r == nil || src == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, src)
}

// Snapshot returns every registered cache's Stats, by name. Caches of one
// name (the caches of several workers in one process) are added up.
func (r *Registry) Snapshot() []Stats {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	srcs := slices.Clone(r.sources)
	r.mu.Unlock()
	at := map[string]int{}
	var out []Stats
	for _, src := range srcs {
		for _, s := range src.Stats() {
			if i, ok := at[s.Name]; ok {
				out[i].add(s)
				continue
			}
			at[s.Name] = len(out)
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Stats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *Stats) add(o Stats) {
	s.Entries += o.Entries
	s.Bytes += o.Bytes
	s.MaxBytes += o.MaxBytes
	s.MaxEntries += o.MaxEntries
	s.Hits += o.Hits
	s.Misses += o.Misses
	s.Evictions += o.Evictions
}
