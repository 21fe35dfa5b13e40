package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/zap"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/exchange"
	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// Hash exchanges: read each input once.
//
// A ticket with a Partition asks for partition j of a producer instance:
// a fragment whose SQL yields each row's partition as its last column
// (planner/lower.go). The tickets of all partitions of one producer
// instance carry the same fragment, and the planner places them on the
// same worker, which runs the fragment once — a run, started by whichever
// partition's pull comes first — and feeds its rows, cut by partition,
// into an exchange (internal/exchange): bounded queues in memory, then
// the worker's exchange spill, then back-pressure. Each partition's DoGet
// claims its queue and streams it while the producer still reads.
//
// A pull whose partition of every run was claimed already (a second
// EXPLAIN ANALYZE pass, a fragment run again after yielding, a fallback
// location) starts a run of its own, which reads the same pinned files:
// the answer is the same, only the input is read again. So is one whose
// partition was dropped: a run drops the partitions nobody claimed once
// its tickets have expired, or earlier when it is short of room. A run
// ends with its query's cancel, the statement's deadline, the worker's
// shutdown, or once every partition was read, released or dropped; its
// producer stops as soon as no partition has a consumer left.

// Defaults of the exchange buffers.
const (
	// DefaultExchangeMemory bounds what the worker's producer runs hold
	// in memory together for consumers that have not read it yet (at
	// most half a query's Go-side share of the memory budget).
	DefaultExchangeMemory = 128 << 20
	// DefaultExchangeSpill bounds what all the worker's runs spill when
	// the engine has no spill limit of its own to take.
	DefaultExchangeSpill = 8 << 30
)

// errNoConsumers ends a producer run whose partitions all ended.
var errNoConsumers = errors.New("every partition's consumer is done")

// runKey identifies the producer instance a run runs: the query, who
// planned it, the instance's name in the plan and a digest of the
// fragment, which every partition's ticket carries alike.
type runKey struct {
	query, principal, producer string
	digest                     [sha256.Size]byte
}

func keyOf(t *wire.Ticket) runKey {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%x\x00", t.Partition.Count, t.SQL, t.Schema)
	for _, sc := range t.Scans {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", sc.View, sc.MetadataLocation, sc.SnapshotID)
		for _, task := range sc.Tasks {
			h.Write(task.Data)
		}
	}
	// A child's sealed bytes differ between the partitions' copies (each
	// seal has its own nonce): its view and locations name it.
	for _, c := range t.Children {
		fmt.Fprintf(h, "%s\x00%q\x00", c.View, c.Locations)
	}
	k := runKey{query: t.QueryID, principal: t.Principal, producer: t.Partition.Producer}
	h.Sum(k.digest[:0])
	return k
}

// run is one run of a producer instance.
type run struct {
	key    runKey
	x      *exchange.Exchange
	cancel context.CancelCauseFunc
}

// exchangeRuns are a worker's producer runs.
type exchangeRuns struct {
	mu   sync.Mutex
	runs map[runKey][]*run
	// released are partitions released before any run had them waiting:
	// the next run of their producer releases them at its start.
	released map[runKey][]releasedPartition
	closed   bool
	wg       sync.WaitGroup
	spill    *exchange.Spill  // nil: the runs do not spill
	memory   *exchange.Memory // shared by the runs
	stats    ExchangeStats    // of the runs that ended, and Runs
}

// partitionReader is a claimed partition as the record reader send takes.
type partitionReader struct {
	ctx    context.Context
	r      *exchange.Reader
	schema *arrow.Schema
	cur    arrow.RecordBatch
	err    error
}

func (p *partitionReader) Next() bool {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.err != nil {
		return false
	}
	rec, err := p.r.Next(p.ctx)
	if err == io.EOF {
		return false
	}
	if err != nil {
		p.err = err
		return false
	}
	p.cur = rec
	return true
}

func (p *partitionReader) RecordBatch() arrow.RecordBatch { return p.cur }
func (p *partitionReader) Record() arrow.RecordBatch      { return p.cur }
func (p *partitionReader) Err() error                     { return p.err }
func (p *partitionReader) Retain()                        {}
func (p *partitionReader) Schema() *arrow.Schema          { return p.schema }
func (p *partitionReader) Release() {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	p.r.Release()
}

// servePartition streams partition t.Partition.Index of t's producer run,
// starting a run when none has the partition waiting.
func (s *Server) servePartition(ctx context.Context, t *wire.Ticket, schema *arrow.Schema, stream flight.DataStreamWriter) error {
	p := t.Partition
	if p.Count < 1 || p.Index < 0 || p.Index >= p.Count || p.Producer == "" {
		return fmt.Errorf("%w: partition %d of %d", wire.ErrMalformed, p.Index, p.Count)
	}
	r, err := s.claim(ctx, t, schema)
	if err != nil {
		return err
	}
	rdr := &partitionReader{ctx: ctx, r: r, schema: schema}
	defer rdr.Release()
	if stream, err = flightio.SendSchema(stream, schema, alloc(ctx)); err != nil {
		return err
	}
	_, _, err = s.send(ctx, schema, rdr, stream)
	var qe *queryError
	if errors.As(err, &qe) && rdr.err != nil {
		// The producer's own error, with its code (a resource, a read).
		return rdr.err
	}
	return err
}

// claim returns t's partition of a run of its producer that has it
// waiting, or of a new run.
func (s *Server) claim(ctx context.Context, t *wire.Ticket, schema *arrow.Schema) (*exchange.Reader, error) {
	key := keyOf(t)
	e := &s.exchanges
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errShuttingDown
	}
	// The partition's consumer is here after all.
	if rps := slices.DeleteFunc(e.released[key], func(rp releasedPartition) bool { return rp.index == t.Partition.Index }); len(rps) > 0 {
		e.released[key] = rps
	} else {
		delete(e.released, key)
	}
	for _, r := range e.runs[key] {
		if rd, ok := r.x.Claim(t.Partition.Index); ok {
			return rd, nil
		}
	}
	r, err := s.startRun(ctx, key, t, schema)
	if err != nil {
		return nil, err
	}
	rd, _ := r.x.Claim(t.Partition.Index)
	return rd, nil
}

// startRun starts a run of t's producer; e.mu is held.
func (s *Server) startRun(ctx context.Context, key runKey, t *wire.Ticket, schema *arrow.Schema) (*run, error) {
	e := &s.exchanges
	// The run outlives the pull that started it: it ends with the query
	// (its cancel, its deadline), the worker or its consumers.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	rctx, stopDeadline := admit.WithDeadline(rctx, admit.Deadline{At: t.Deadline, Timeout: t.Timeout})
	rctx, _, end, err := s.queries.begin(rctx, t)
	if err != nil {
		stopDeadline()
		cancel(nil)
		return nil, err
	}
	rctx, closeAccount := s.account(rctx, t.QueryID)
	x, err := exchange.New(exchange.Options{Partitions: t.Partition.Count, Schema: schema, Memory: e.memory,
		Spill: e.spill, Allocator: alloc(rctx)})
	if err != nil {
		closeAccount()
		end(err)
		stopDeadline()
		cancel(nil)
		return nil, fmt.Errorf("%w: %v", errInternal, err)
	}
	r := &run{key: key, x: x, cancel: cancel}
	e.stats.Runs++
	for _, rp := range e.released[key] {
		if rd, ok := x.Claim(rp.index); ok {
			rd.Release()
		}
	}
	delete(e.released, key)
	if e.runs == nil {
		e.runs = map[runKey][]*run{}
	}
	e.runs[key] = append(e.runs[key], r)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		err := s.produceRun(rctx, r, t, schema)
		s.forget(r)
		end(err)
		closeAccount()
		stopDeadline()
		cancel(nil)
	}()
	return r, nil
}

// produceRun runs the producer into r's exchange, then waits until its
// partitions end: read, released, or dropped once the tickets expired.
func (s *Server) produceRun(ctx context.Context, r *run, t *wire.Ticket, schema *arrow.Schema) error {
	// Once every partition ended, the producer need not go on.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-r.x.Done():
			r.cancel(errNoConsumers)
		case <-ctx.Done():
		}
	}()
	defer func() { <-watched }()
	expiry := time.AfterFunc(time.Until(t.ExpiresAt), func() { r.x.DropWaiting() })
	defer expiry.Stop()
	start := time.Now()
	age, endAge := s.ages.start(t.QueryID)
	err := s.produce(ctx, r.x, t, schema)
	if yieldable(err) && r.x.Stats().Rows == 0 {
		// Out of DuckDB's memory or spill before any row: as a fragment
		// does (yield.go), wait for older queries and run once more.
		if older := s.ages.older(age, t.QueryID); len(older) > 0 {
			tracing.Logger(ctx, s.log).Info("worker: exchange producer out of DuckDB memory or spill while older queries run; waiting for them to run again",
				zap.String("query", t.QueryID), zap.Int("older", len(older)), zap.Error(err))
			endAge()
			waitFor(ctx, older, yieldWait)
			s.yielded.Add(1)
			s.opts.Metrics.Yielded()
			_, endAge = s.ages.start(t.QueryID)
			err = s.produce(ctx, r.x, t, schema)
		}
	}
	endAge()
	if errors.Is(context.Cause(ctx), errNoConsumers) {
		err = nil
	}
	if err != nil {
		r.x.Abort(err)
	} else {
		r.x.Close(nil)
	}
	st := r.x.Stats()
	tracing.Logger(ctx, s.log).Debug("worker: exchange producer done", zap.String("query", t.QueryID),
		zap.String("producer", t.Partition.Producer), zap.Int64("rows", st.Rows), zap.Int64("bytes", st.Bytes),
		zap.Int("spilled_batches", st.SpilledBatches), zap.Int64("spilled_bytes", st.SpilledBytes),
		zap.Int("dropped", st.Dropped), zap.Duration("took", time.Since(start)), zap.Error(err))
	select {
	case <-r.x.Done():
	case <-ctx.Done():
		r.x.Abort(context.Cause(ctx))
		// The consumers still reading get the cause and release.
		<-r.x.Done()
	}
	return err
}

// produce runs t's fragment on a connection of its own and puts each
// batch of its result, cut by partition, into x.
func (s *Server) produce(ctx context.Context, x *exchange.Exchange, t *wire.Ticket, schema *arrow.Schema) (err error) {
	ctx, span := tracing.Continue(ctx, "exchange producer", t.Trace)
	defer func() { tracing.End(span, err) }()
	conn, err := s.opts.Engine.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	streams, err := s.inputs(ctx, conn, t)
	if err != nil {
		return err
	}
	rdr, err := conn.Query(ctx, t.SQL, s.sendOptions(ctx))
	if err != nil {
		return &queryError{err: err}
	}
	defer rdr.Release()
	if err := checkPartitioned(schema, rdr.Schema()); err != nil {
		return err
	}
	mem := alloc(ctx)
	for rdr.Next() {
		if err := membudget.Check(mem); err != nil {
			return err
		}
		parts, err := exchange.Split(ctx, rdr.RecordBatch(), x.Partitions(), schema)
		if err != nil {
			return fmt.Errorf("%w: %v", errInternal, err)
		}
		for j, p := range parts {
			if p == nil {
				continue
			}
			if err := x.Put(ctx, j, p); err != nil {
				for _, rest := range parts[j+1:] {
					if rest != nil {
						rest.Release()
					}
				}
				if errors.Is(err, exchange.ErrNoConsumers) {
					return nil
				}
				return err
			}
		}
	}
	if err := rdr.Err(); err != nil {
		if serr := streamsErr(streams); serr != nil {
			return serr
		}
		return &queryError{err: err}
	}
	return nil
}

// checkPartitioned checks a producer's result: the planned columns, then
// the partition.
func checkPartitioned(planned, got *arrow.Schema) error {
	n := got.NumFields() - 1
	if n != planned.NumFields() {
		return fmt.Errorf("%w: producer result has %d columns, planned %d and the partition", errInternal, got.NumFields(), planned.NumFields())
	}
	if err := checkTypes(planned, arrow.NewSchema(got.Fields()[:n], nil)); err != nil {
		return fmt.Errorf("%w: producer result: %v", errInternal, err)
	}
	return nil
}

// releasedPartition is a partition released before its run started.
type releasedPartition struct {
	index   int
	expires time.Time
}

// releasePartition answers wire.ActionReleasePartition: the consumer of
// the sealed partition ticket body is done without reading it. A run
// that has the partition waiting frees it; when none has, the next run
// of its producer will, until the ticket expires. Only the cluster may
// ask when authentication is on.
func (s *Server) releasePartition(ctx context.Context, sealed []byte) error {
	t, err := s.opts.Key.Open(sealed, time.Now())
	if err != nil {
		return err
	}
	if t.Partition == nil {
		return fmt.Errorf("%w: not a partition", wire.ErrMalformed)
	}
	if err := s.admit(ctx, t); err != nil {
		return err
	}
	key := keyOf(t)
	e := &s.exchanges
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.runs[key] {
		if rd, ok := r.x.Claim(t.Partition.Index); ok {
			rd.Release()
			return nil
		}
	}
	now := time.Now()
	for k, rps := range e.released {
		rps = slices.DeleteFunc(rps, func(rp releasedPartition) bool { return now.After(rp.expires) })
		if len(rps) == 0 {
			delete(e.released, k)
		} else {
			e.released[k] = rps
		}
	}
	if e.released == nil {
		e.released = map[runKey][]releasedPartition{}
	}
	e.released[key] = append(e.released[key], releasedPartition{index: t.Partition.Index, expires: t.ExpiresAt})
	return nil
}

// forget removes a run that has ended.
func (s *Server) forget(r *run) {
	e := &s.exchanges
	e.mu.Lock()
	defer e.mu.Unlock()
	st := r.x.Stats()
	e.stats.Rows += st.Rows
	e.stats.SpilledBatches += st.SpilledBatches
	runs := e.runs[r.key]
	for i, o := range runs {
		if o == r {
			runs = append(runs[:i], runs[i+1:]...)
			break
		}
	}
	if len(runs) == 0 {
		delete(e.runs, r.key)
	} else {
		e.runs[r.key] = runs
	}
}

// closeExchanges cancels every run and refuses new ones (Shutdown).
func (s *Server) closeExchanges(cause error) {
	e := &s.exchanges
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for _, runs := range e.runs {
		for _, r := range runs {
			r.cancel(cause)
		}
	}
}

// ExchangeStats are what a worker's hash exchange producers did.
type ExchangeStats struct {
	// Running is how many producer runs the worker holds now; Runs how
	// many it started.
	Running, Runs int
	// Rows are the rows the runs put into partitions; SpilledBatches how
	// many batches of them went to the spill.
	Rows           int64
	SpilledBatches int
}

// Exchanges is what the worker's hash exchange producers did so far.
func (s *Server) Exchanges() ExchangeStats {
	e := &s.exchanges
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stats
	for _, runs := range e.runs {
		st.Running += len(runs)
	}
	return st
}
