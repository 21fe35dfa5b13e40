package cluster

import (
	"context"
	"net/http"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/flightsql"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/metrics"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/internal/status"
	"github.com/icefloe/icefloe/statement"
)

// coordinatorSources are what a coordinator's gauges read.
func coordinatorSources(reg *queryreg.Registry, srv *flightsql.Server, reach fleet.QueryWorkers, ex *statement.Executor, mounts *catalog.Mounts) metrics.CoordinatorSources {
	return metrics.CoordinatorSources{
		Active:  reg.Running,
		Queued:  func() int { return srv.AdmissionStats().Queued },
		Running: func() int { return srv.AdmissionStats().Running },
		Workers: func() map[string]int {
			n := map[string]int{}
			for _, h := range reach.Health() {
				n[h.Health]++
			}
			return n
		},
		Commits: func() (int64, int64, int64, int64) {
			c := ex.Planner().Commits()
			return c.Attempts.Load(), c.Conflicts.Load(), c.Retries.Load(), c.Written.Load()
		},
		Cache: func() metrics.CacheStats {
			c := mounts.Cache().Snapshot()
			return metrics.CacheStats{MetadataHits: c.Hits, MetadataMisses: c.Misses, FileHits: c.Files.Hits, FileMisses: c.Files.Misses,
				MemoHits: c.Memos.Hits, MemoMisses: c.Memos.Misses, Entries: c.Entries, Bytes: c.Bytes, MaxBytes: c.MaxBytes, Evictions: c.Evictions}
		},
	}
}

// duckMemorySQL sums what DuckDB's buffer manager holds and has spilled.
const duckMemorySQL = "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT, coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory()"

// duckMemory reads eng's memory and spill bytes.
func duckMemory(eng *engine.Engine) func(context.Context) (int64, int64, error) {
	return func(ctx context.Context) (mem, temp int64, err error) {
		conn, err := eng.Conn(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close()
		err = conn.DB().QueryRowContext(ctx, duckMemorySQL).Scan(&mem, &temp)
		return mem, temp, err
	}
}

// StatusPage is the coordinator's status page (internal/status), behind
// the same authentication as its Flight service.
func (c *Coordinator) StatusPage() (http.Handler, error) {
	return status.New(status.Options{Runtime: c.Runtime, Auth: c.security.Auth, Policy: c.security.policy()})
}

// DuckDBMemory is what the worker's DuckDB buffer manager holds and has
// spilled now (duckdb_memory()).
func (w *Worker) DuckDBMemory(ctx context.Context) (mem, temp int64, err error) {
	return duckMemory(w.engine)(ctx)
}
