package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// queryActionTimeout bounds asking one worker for progress or telling it
// to cancel.
const queryActionTimeout = 2 * time.Second

// QueryWorkers reaches the workers for the query registry
// (queryreg.Workers): it asks every worker the coordinator knows (live or
// draining: a draining worker still serves the endpoints planned on it)
// for the progress of queries, and tells each to cancel one.
type QueryWorkers struct {
	Workers planner.Workers
	Flight  *flightclient.Pool
}

var _ queryreg.Workers = QueryWorkers{}

// knower is implemented by worker sets that also know workers not in
// planning (draining ones).
type knower interface{ Known() []string }

func (w QueryWorkers) locations() []string {
	if k, ok := w.Workers.(knower); ok {
		return k.Known()
	}
	var out []string
	for _, l := range w.Workers.Live() {
		out = append(out, l.Location)
	}
	return out
}

// each runs the action on every worker at once.
func (w QueryWorkers) each(ctx context.Context, typ string, body []byte, got func(loc string, res [][]byte)) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, loc := range w.locations() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, queryActionTimeout)
			defer cancel()
			res, err := w.Flight.Action(ctx, loc, typ, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("worker %s: %w", loc, err))
				return
			}
			got(loc, res)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Progress sums what every worker served of the queries.
func (w QueryWorkers) Progress(ctx context.Context, ids []string) (map[string]queryreg.Progress, error) {
	body, err := json.Marshal(wire.ProgressRequest{QueryIDs: ids})
	if err != nil {
		return nil, err
	}
	out := map[string]queryreg.Progress{}
	err = w.each(ctx, wire.ActionQueryProgress, body, func(_ string, res [][]byte) {
		for _, b := range res {
			var r wire.ProgressReply
			if json.Unmarshal(b, &r) != nil {
				continue
			}
			for id, p := range r.Queries {
				sum := out[id]
				sum.Rows += p.Rows
				sum.Bytes += p.Bytes
				sum.EndpointsDone += p.Endpoints
				sum.ReadFiles += p.ReadFiles
				sum.ReadBytes += p.ReadBytes
				out[id] = sum
			}
		}
	})
	return out, err
}

// Cancel tells every worker to cancel the query's streams and refuse its
// tickets until they expire.
func (w QueryWorkers) Cancel(ctx context.Context, id string, until time.Time) error {
	body, err := json.Marshal(wire.QueryCancel{QueryID: id, Until: until})
	if err != nil {
		return err
	}
	return w.each(ctx, wire.ActionCancelQuery, body, func(string, [][]byte) {})
}

// Stats asks every worker for its counters, by location.
func (w QueryWorkers) Stats(ctx context.Context) map[string]wire.WorkerStats {
	out := map[string]wire.WorkerStats{}
	_ = w.each(ctx, wire.ActionWorkerStats, nil, func(loc string, res [][]byte) {
		var st wire.WorkerStats
		if len(res) == 1 && json.Unmarshal(res[0], &st) == nil {
			out[loc] = st
		}
	}) // a worker that does not answer shows as not reachable
	return out
}

// healther is implemented by worker sets that know each worker's health
// (*WorkerPool).
type healther interface{ Health() []WorkerHealth }

// Health is every worker's health: the pool's view, or every live worker
// of a static set.
func (w QueryWorkers) Health() []WorkerHealth {
	if h, ok := w.Workers.(healther); ok {
		return h.Health()
	}
	var out []WorkerHealth
	for _, l := range w.Workers.Live() {
		out = append(out, WorkerHealth{Location: l.Location, Health: HealthLive, Slots: l.Slots})
	}
	return out
}

// Runtime serves the system.runtime tables and CALL system.cancel_query
// (planner.Runtime) from the query registry and the workers.
type Runtime struct {
	Registry *queryreg.Registry
	Reach    QueryWorkers
}

var _ planner.Runtime = Runtime{}

// Queries lists the running and recent statements.
func (r Runtime) Queries(ctx context.Context) []queryreg.Info { return r.Registry.List(ctx) }

// Workers lists the workers with their health and counters.
func (r Runtime) Workers(ctx context.Context) []planner.RuntimeWorker {
	stats := r.Reach.Stats(ctx)
	var out []planner.RuntimeWorker
	for _, h := range r.Reach.Health() {
		st, ok := stats[h.Location]
		out = append(out, planner.RuntimeWorker{Location: h.Location, Health: h.Health, Slots: h.Slots, Reached: ok, Stats: st})
	}
	return out
}

// CancelQuery cancels a running statement everywhere.
func (r Runtime) CancelQuery(ctx context.Context, id string, may func(string) bool) (queryreg.Info, error) {
	return r.Registry.Cancel(ctx, id, may)
}
