package wire

import "time"

// Flight actions by which a coordinator follows and cancels a query on
// the workers that serve its endpoints (only the cluster may send them
// when authentication is on).
const (
	// ActionQueryProgress asks a worker what it served of queries; its
	// body is a JSON ProgressRequest, its result a JSON ProgressReply.
	ActionQueryProgress = "icefloe.query-progress"
	// ActionCancelQuery tells a worker to cancel a query's streams and to
	// refuse its tickets until Until; its body is a JSON QueryCancel.
	ActionCancelQuery = "icefloe.cancel-query"
	// ActionReleasePartition tells the worker that serves a hash
	// exchange partition that its consumer is done without reading it;
	// its body is the partition's sealed ticket.
	ActionReleasePartition = "icefloe.release-partition"
)

// ProgressRequest names the queries whose progress is asked.
type ProgressRequest struct {
	QueryIDs []string `json:"q"`
}

// QueryProgress is what one worker served of one query's endpoints
// (child fragments pulled by peers and write fragments do not count),
// and the data files its tickets of every kind read: a ticket's scans
// count (their files and Scan.Bytes) once it ended without error.
type QueryProgress struct {
	Rows      int64 `json:"r"`
	Bytes     int64 `json:"b"`
	Endpoints int   `json:"e"`
	ReadFiles int64 `json:"rf,omitempty"`
	ReadBytes int64 `json:"rb,omitempty"`
}

// ProgressReply is a worker's progress by query id; a query it never
// served is absent.
type ProgressReply struct {
	Queries map[string]QueryProgress `json:"q"`
}

// QueryCancel cancels one query.
type QueryCancel struct {
	QueryID string    `json:"q"`
	Until   time.Time `json:"until"`
}

// ActionWorkerStats asks a worker for its counters; the result is a JSON
// WorkerStats.
const ActionWorkerStats = "icefloe.worker-stats"

// WorkerStats are a worker's counters as it reports them.
type WorkerStats struct {
	// RunningFragments and QueuedFragments are its fragment limiter's;
	// MaxFragments is its limit (0: none).
	RunningFragments int `json:"run"`
	QueuedFragments  int `json:"queue"`
	MaxFragments     int `json:"max"`
	// Streams are the DoGets in flight.
	Streams int `json:"streams"`
	// Cache is the metadata cache.
	Cache CacheStats `json:"cache"`
	// Caches are every cache of the worker by name (the metadata cache,
	// its memos, the data cache, …), as system.runtime.caches lists them.
	Caches []CacheStats `json:"caches,omitempty"`
}

// CacheStats are a cache's counters.
type CacheStats struct {
	// Name names the cache in Caches; empty in Cache.
	Name string `json:"name,omitempty"`
	// MaxEntries bounds Entries; 0: no count bound.
	MaxEntries int    `json:"max_entries,omitempty"`
	Hits       uint64 `json:"hits"`
	Misses     uint64 `json:"misses"`
	Entries    int    `json:"entries"`
	Bytes      int64  `json:"bytes"`
	MaxBytes   int64  `json:"max_bytes"`
	Evictions  uint64 `json:"evictions"`
}
