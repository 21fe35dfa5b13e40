package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/icefloe/icefloe/internal/engine"
)

// Yielding to older queries when DuckDB's memory or spill disk runs out.
//
// A worker's DuckDB shares one memory_limit and one spill folder among
// every fragment it runs. When a large query fills both, whichever
// fragment next needs a buffer fails — as often a small query that came
// later as the one that filled them. As Trino's queries wait for memory in
// a full pool, a fragment that fails that way while fragments of older
// queries run on the worker waits for those to end (at most yieldWait)
// and runs once more; the oldest query is the one that gets the error. A
// fragment never waits for one of its own query (a parent waits for its
// children), and nothing runs again once rows have left.

// yieldWait bounds how long a fragment waits for older queries before it
// runs again anyway.
const yieldWait = 30 * time.Second

// fragmentAges numbers the fragments running on DuckDB in the order they
// started.
type fragmentAges struct {
	mu      sync.Mutex
	next    uint64
	running map[uint64]agedFragment
}

type agedFragment struct {
	query string
	done  chan struct{}
}

// start registers a fragment of query; the caller calls end when it
// stops using DuckDB.
func (a *fragmentAges) start(query string) (age uint64, end func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running == nil {
		a.running = map[uint64]agedFragment{}
	}
	a.next++
	age = a.next
	f := agedFragment{query: query, done: make(chan struct{})}
	a.running[age] = f
	var once sync.Once
	return age, func() {
		once.Do(func() {
			a.mu.Lock()
			delete(a.running, age)
			a.mu.Unlock()
			close(f.done)
		})
	}
}

// older returns the done channels of the fragments of other queries than
// query that started before age and still run.
func (a *fragmentAges) older(age uint64, query string) []chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []chan struct{}
	for n, f := range a.running {
		if n < age && f.query != query {
			out = append(out, f.done)
		}
	}
	return out
}

// waitFor waits until every channel of done is closed, max passed or ctx
// ended, and says whether they all closed.
func waitFor(ctx context.Context, done []chan struct{}, max time.Duration) bool {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for _, ch := range done {
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// yields says whether a fragment that failed with err may run again once
// older queries end: DuckDB ran out of its memory limit or its spill
// folder (not a value too large, not a full disk, not a child fragment's
// failure elsewhere) before any row left.
func yields(err error, sent *sentRows) bool {
	return sent.rows == 0 && yieldable(err)
}

// yieldable says whether err is DuckDB running out of its memory limit or
// its spill folder in the fragment itself (yields).
func yieldable(err error) bool {
	if err == nil || !engine.IsResourceError(err) {
		return false
	}
	var ce *childError
	if errors.As(err, &ce) {
		return false
	}
	switch engine.ResourceKey(err) {
	case engine.MemoryKey, engine.TempSizeKey:
		return true
	}
	return false
}

// sentRows counts the rows a fragment streamed.
type sentRows struct {
	flight.DataStreamWriter
	rows int64
}

func (s *sentRows) Send(d *flight.FlightData) error {
	s.rows += batchRows(d.DataHeader)
	return s.DataStreamWriter.Send(d)
}

// YieldedFragments is how many fragments ran out of DuckDB's memory or
// spill while older queries ran, waited for them and ran again.
func (s *Server) YieldedFragments() int64 { return s.yielded.Load() }
