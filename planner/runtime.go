package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/wire"
)

// The system.runtime tables show the coordinator's running and recent
// statements, its workers and their caches; CALL system.cancel_query
// (statement/runtime.go) cancels a statement. Like information_schema (infoschema.go) the tables
// are built on the coordinator and spliced into the query as a VALUES
// list, so they filter, sort and join like any table. A principal sees
// its own statements and may cancel them; an admin (authz.AdminRole, or
// anyone while authentication is off) sees and cancels every one, and
// alone reads workers and caches.

// Runtime is what the system.runtime tables show and cancel_query acts on.
type Runtime interface {
	// Queries lists the running and recent statements, newest first.
	Queries(ctx context.Context) []queryreg.Info
	// Workers lists the workers the coordinator knows, with what they
	// report of themselves.
	Workers(ctx context.Context) []RuntimeWorker
	// CancelQuery cancels a running statement everywhere; may says
	// whether the caller may cancel a statement of that principal.
	CancelQuery(ctx context.Context, id string, may func(principal string) bool) (queryreg.Info, error)
}

// RuntimeWorker is one worker as the coordinator sees it.
type RuntimeWorker struct {
	Location string
	// Health is live, draining, unhealthy, refused or unknown.
	Health string
	Slots  int
	// Reached says the worker answered for its Stats.
	Reached bool
	Stats   wire.WorkerStats
}

var runtimeTables = map[string][]infoColumn{
	"queries": {{"query_id", "VARCHAR"}, {"principal", "VARCHAR"}, {"kind", "VARCHAR"}, {"state", "VARCHAR"},
		{"sql", "VARCHAR"}, {"strategy", "VARCHAR"}, {"plan", "VARCHAR"}, {"started", "TIMESTAMPTZ"},
		{"ended", "TIMESTAMPTZ"}, {"elapsed_ms", "BIGINT"}, {"rows", "BIGINT"}, {"bytes", "BIGINT"},
		{"endpoints_done", "INTEGER"}, {"endpoints_total", "INTEGER"}, {"error", "VARCHAR"}},
	"workers": {{"address", "VARCHAR"}, {"health", "VARCHAR"}, {"draining", "BOOLEAN"}, {"slots", "INTEGER"},
		{"reachable", "BOOLEAN"}, {"running_fragments", "INTEGER"}, {"queued_fragments", "INTEGER"},
		{"max_fragments", "INTEGER"}, {"streams", "INTEGER"}, {"cache_entries", "INTEGER"},
		{"cache_bytes", "BIGINT"}, {"cache_max_bytes", "BIGINT"}},
	"caches": {{"node", "VARCHAR"}, {"cache", "VARCHAR"}, {"hits", "BIGINT"}, {"misses", "BIGINT"},
		{"entries", "INTEGER"}, {"bytes", "BIGINT"}, {"max_bytes", "BIGINT"}, {"evictions", "BIGINT"}, {"max_entries", "INTEGER"}},
}

// runtimeTable replaces n with the system.runtime table it names, and
// reports whether it did (or failed, with r.err set).
func (r *resolver) runtimeTable(ctx context.Context, n node) bool {
	cat, sch, name := str(n, "catalog_name"), str(n, "schema_name"), strings.ToLower(str(n, "table_name"))
	cols, ok := runtimeTables[name]
	if !ok || !strings.EqualFold(cat, "system") || !strings.EqualFold(sch, "runtime") {
		return false
	}
	rows, err := r.p.runtimeRows(ctx, name)
	if err == nil {
		err = r.splice(ctx, n, "system.runtime."+name, cols, rows)
	}
	if err != nil {
		r.err = err
	}
	return true
}

func (p *Planner) runtimeRows(ctx context.Context, name string) ([]infoRow, error) {
	rt := p.opts.Runtime
	if rt == nil {
		return nil, fmt.Errorf("%w: system.runtime tables are served by a coordinator", ErrUnsupported)
	}
	if name == "queries" {
		return queryRows(ctx, p, rt.Queries(ctx)), nil
	}
	if !p.opts.Policy.Admin(ctx) {
		return nil, fmt.Errorf("%w: %s may not read system.runtime.%s: it takes the admin role", ErrDenied, who(ctx), name)
	}
	var rows []infoRow
	if name == "caches" {
		for _, c := range p.opts.Caches.Snapshot() {
			rows = append(rows, cacheRow("coordinator", wire.CacheStats{Name: c.Name, MaxEntries: c.MaxEntries, Hits: c.Hits,
				Misses: c.Misses, Entries: c.Entries, Bytes: c.Bytes, MaxBytes: c.MaxBytes, Evictions: c.Evictions}))
		}
	}
	for _, w := range rt.Workers(ctx) {
		st, c := w.Stats, w.Stats.Cache
		if name == "caches" {
			if !w.Reached {
				continue
			}
			if len(st.Caches) == 0 { // a worker that reports its metadata cache only
				c.Name = "metadata"
				st.Caches = []wire.CacheStats{c}
			}
			for _, c := range st.Caches {
				rows = append(rows, cacheRow(w.Location, c))
			}
			continue
		}
		if !w.Reached {
			rows = append(rows, infoRow{w.Location, w.Health, w.Health == "draining", w.Slots, false, nil, nil, nil, nil, nil, nil, nil})
			continue
		}
		rows = append(rows, infoRow{w.Location, w.Health, w.Health == "draining", w.Slots, true, st.RunningFragments,
			st.QueuedFragments, st.MaxFragments, st.Streams, c.Entries, c.Bytes, c.MaxBytes})
	}
	return rows, nil
}

// cacheRow is one row of system.runtime.caches: a cache of node (a
// worker's address, or "coordinator").
func cacheRow(node string, c wire.CacheStats) infoRow {
	var maxEntries any
	if c.MaxEntries > 0 {
		maxEntries = c.MaxEntries
	}
	return infoRow{node, c.Name, int64(c.Hits), int64(c.Misses), c.Entries, c.Bytes, c.MaxBytes, int64(c.Evictions), maxEntries}
}

// queryRows are the rows of system.runtime.queries the caller may see.
func queryRows(ctx context.Context, p *Planner, all []queryreg.Info) []infoRow {
	admin, me := p.opts.Policy.Admin(ctx), auth.Name(ctx)
	var rows []infoRow
	for _, q := range all {
		if !admin && q.Principal != me {
			continue
		}
		var ended any
		if !q.End.IsZero() {
			ended = q.End
		}
		var errText any
		if q.Error != "" {
			errText = q.Error
		}
		rows = append(rows, infoRow{q.ID, q.Principal, q.Kind, string(q.State), q.SQL, q.Strategy, q.Plan, q.Start, ended,
			q.Elapsed().Milliseconds(), q.Rows, q.Bytes, q.EndpointsDone, q.EndpointsTotal, errText})
	}
	return rows
}

func who(ctx context.Context) string {
	if n := auth.Name(ctx); n != "" {
		return n
	}
	return "an anonymous caller"
}
