package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/metrics"
	"github.com/icefloe/icefloe/wire"
)

// errQueryCancelled: the coordinator cancelled the ticket's query
// (CALL system.cancel_query or the status page); Cancelled.
var errQueryCancelled = errors.New("query cancelled")

// tracked is what the worker served of one query's endpoints, and the
// cancel functions of its streams in flight.
type tracked struct {
	rows, bytes atomic.Int64
	done        int // guarded by queryTracker.mu
	until       time.Time
	active      map[*int]context.CancelCauseFunc

	// readFiles and readBytes are the files (and their bytes) the
	// query's tickets of every kind read.
	readFiles, readBytes atomic.Int64
}

// queryTracker follows the queries whose tickets the worker serves, until
// their tickets expire, and those the coordinator cancelled.
type queryTracker struct {
	mu        sync.Mutex
	live      map[string]*tracked
	cancelled map[string]time.Time
}

// begin registers a stream of t's query. It fails with errQueryCancelled
// when the query was cancelled. The caller calls end with the stream's
// outcome.
func (qt *queryTracker) begin(ctx context.Context, t *wire.Ticket) (context.Context, *tracked, func(error), error) {
	qt.mu.Lock()
	defer qt.mu.Unlock()
	now := time.Now()
	qt.expireLocked(now)
	if until, ok := qt.cancelled[t.QueryID]; ok && now.Before(until) {
		return nil, nil, nil, fmt.Errorf("%w: %s", errQueryCancelled, t.QueryID)
	}
	if qt.live == nil {
		qt.live = map[string]*tracked{}
	}
	q := qt.live[t.QueryID]
	if q == nil {
		q = &tracked{active: map[*int]context.CancelCauseFunc{}}
		qt.live[t.QueryID] = q
	}
	q.until = later(q.until, t.ExpiresAt)
	ctx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	q.active[key] = cancel
	endpoint := !t.Child && t.Write == nil
	return ctx, q, func(err error) {
		qt.mu.Lock()
		delete(q.active, key)
		if err == nil && endpoint {
			q.done++
		}
		qt.mu.Unlock()
		cancel(nil)
	}, nil
}

// read counts the files of t's scans (and their bytes) as read by the
// query, once t ended without error, and returns them.
func (q *tracked) read(t *wire.Ticket) (files, bytes int64) {
	for _, sc := range t.Scans {
		files, bytes = files+int64(len(sc.Tasks)), bytes+sc.Bytes
	}
	q.readFiles.Add(files)
	q.readBytes.Add(bytes)
	return files, bytes
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// expireLocked forgets the queries whose tickets all expired.
func (qt *queryTracker) expireLocked(now time.Time) {
	for id, q := range qt.live {
		if now.After(q.until) && len(q.active) == 0 {
			delete(qt.live, id)
		}
	}
	for id, until := range qt.cancelled {
		if now.After(until) {
			delete(qt.cancelled, id)
		}
	}
}

// cancel cancels every stream of the query and refuses its tickets until.
func (qt *queryTracker) cancel(c wire.QueryCancel) int {
	qt.mu.Lock()
	defer qt.mu.Unlock()
	if qt.cancelled == nil {
		qt.cancelled = map[string]time.Time{}
	}
	qt.cancelled[c.QueryID] = later(qt.cancelled[c.QueryID], c.Until)
	q := qt.live[c.QueryID]
	if q == nil {
		return 0
	}
	for _, cancel := range q.active {
		cancel(fmt.Errorf("%w: %s", errQueryCancelled, c.QueryID))
	}
	return len(q.active)
}

func (qt *queryTracker) progress(ids []string) wire.ProgressReply {
	qt.mu.Lock()
	defer qt.mu.Unlock()
	out := wire.ProgressReply{Queries: map[string]wire.QueryProgress{}}
	for _, id := range ids {
		if q := qt.live[id]; q != nil {
			out.Queries[id] = wire.QueryProgress{Rows: q.rows.Load(), Bytes: q.bytes.Load(), Endpoints: q.done,
				ReadFiles: q.readFiles.Load(), ReadBytes: q.readBytes.Load()}
		}
	}
	return out
}

// meteredStream counts the rows and bytes a ticket streams, and into its
// query's progress when it is an endpoint, and notes when its first batch
// left.
type meteredStream struct {
	flight.DataStreamWriter
	q           *tracked // nil but for endpoints
	rows, bytes int64
	first       time.Time
}

func (m *meteredStream) Send(d *flight.FlightData) error {
	n, b := batchRows(d.DataHeader), int64(len(d.DataBody))
	m.rows, m.bytes = m.rows+n, m.bytes+b
	if m.first.IsZero() && n > 0 {
		m.first = time.Now()
	}
	if m.q != nil {
		m.q.bytes.Add(b)
		m.q.rows.Add(n)
	}
	return m.DataStreamWriter.Send(d)
}

// ticketKind is t's kind in the metrics.
func ticketKind(t *wire.Ticket) string {
	switch {
	case t.Write != nil:
		return metrics.TicketWrite
	case t.Child:
		return metrics.TicketChild
	}
	return metrics.TicketEndpoint
}

// queryAction answers ActionQueryProgress, ActionCancelQuery and
// ActionWorkerStats, only from
// the cluster when authentication is on.
func (s *Server) queryAction(ctx context.Context, a *flight.Action) ([]byte, error) {
	if s.opts.Authenticated && !auth.FromContext(ctx).Cluster() {
		return nil, errClusterOnly
	}
	if a.GetType() == wire.ActionWorkerStats {
		return json.Marshal(s.Stats())
	}
	if a.GetType() == wire.ActionCancelQuery {
		var c wire.QueryCancel
		if err := json.Unmarshal(a.GetBody(), &c); err != nil || c.QueryID == "" {
			return nil, fmt.Errorf("%w: query cancel: %v", wire.ErrMalformed, err)
		}
		n := s.queries.cancel(c)
		s.log.Info("worker: query cancelled", zap.String("query", c.QueryID), zap.Int("streams", n))
		return nil, nil
	}
	var req wire.ProgressRequest
	if err := json.Unmarshal(a.GetBody(), &req); err != nil {
		return nil, fmt.Errorf("%w: progress request: %v", wire.ErrMalformed, err)
	}
	return json.Marshal(s.queries.progress(req.QueryIDs))
}

// Stats are the counters ActionWorkerStats reports.
func (s *Server) Stats() wire.WorkerStats {
	a := s.fragments.Stats()
	streams, _ := s.calls.Idle()
	c := s.opts.Cache.Snapshot()
	return wire.WorkerStats{
		RunningFragments: a.Running, QueuedFragments: a.Queued, MaxFragments: s.opts.Admission.MaxRunning,
		Streams: streams,
		Cache: wire.CacheStats{Hits: c.Hits, Misses: c.Misses, Entries: c.Entries, Bytes: c.Bytes,
			MaxBytes: c.MaxBytes, Evictions: c.Evictions},
		Caches: wireCaches(s.caches.Snapshot()),
	}
}

// Caches is the registry of the worker's caches: what ActionWorkerStats
// reports in WorkerStats.Caches (and system.runtime.caches lists).
func (s *Server) Caches() *cachestats.Registry { return &s.caches }

func wireCaches(all []cachestats.Stats) []wire.CacheStats {
	out := make([]wire.CacheStats, len(all))
	for i, c := range all {
		out[i] = wire.CacheStats{Name: c.Name, MaxEntries: c.MaxEntries, Hits: c.Hits, Misses: c.Misses,
			Entries: c.Entries, Bytes: c.Bytes, MaxBytes: c.MaxBytes, Evictions: c.Evictions}
	}
	return out
}

// registerCaches registers the caches the worker is given.
func (s *Server) registerCaches() {
	if s.opts.Cache != nil {
		s.caches.Register(cachestats.Funcs(s.opts.Cache.CacheStats))
	}
	if s.reuse != nil {
		s.caches.Register(s.reuse)
	}
	if dc := s.opts.DataCache; dc != nil {
		s.caches.Register(cachestats.Func(func() cachestats.Stats {
			d := dc.Stats()
			return cachestats.Stats{Name: "data", Entries: d.Entries, Bytes: d.Bytes, MaxBytes: d.MaxBytes,
				Hits: d.Hits, Misses: d.Misses, Evictions: d.Evictions}
		}))
	}
}
