package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/flight"
	flightpb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/audit"
	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/drain"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/exchange"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/flightio"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/membudget"
	"github.com/icefloe/icefloe/internal/metrics"
	"github.com/icefloe/icefloe/internal/tracing"
	"github.com/icefloe/icefloe/wire"
)

// DefaultBatchRows is the row count a worker merges DuckDB's small result
// chunks toward before sending a batch.
const DefaultBatchRows = 64 * 1024

// DefaultBatchBytes bounds the bytes of one batch a worker sends: half
// the 16 MiB clients accept in one message by default (ADBC, gRPC).
const DefaultBatchBytes = 8 << 20

// DefaultWriteRowGroupBytes is the Arrow bytes of rows a write fragment
// buffers per open data file before flushing a row group.
const DefaultWriteRowGroupBytes = 32 << 20

// DefaultFlushAfter is how long a worker lets merged rows wait for more
// before it sends them in a smaller batch.
const DefaultFlushAfter = 100 * time.Millisecond

// FlightServiceName is the gRPC service name of Flight, under which the
// health service reports the worker's status (as well as under "").
var FlightServiceName = flightpb.FlightService_ServiceDesc.ServiceName

// LivenessService is the health service name that stays SERVING while the
// process runs, draining included (a liveness probe's); "" and
// FlightServiceName turn NOT_SERVING when it drains (a readiness probe's,
// and the coordinators').
const LivenessService = "liveness"

// Options configure a worker Server.
type Options struct {
	// Key opens tickets. Required.
	Key *wire.Key
	// Engine runs fragments; each DoGet takes its own connection. Required.
	Engine *engine.Engine
	// Cache reopens pinned table metadata. Required.
	Cache *catalog.MetadataCache
	// DataCache keeps local copies of object-store data files (see
	// cached.go); nil reads them from the store every time. With the
	// cache's directory among the engine's ReadDirs, DuckDB reads the
	// copies of direct scans.
	DataCache *datacache.Cache
	// FragmentCacheConns bounds the idle connections the fragment cache
	// keeps with their views and prepared fragments (reuse.go); 0 means
	// DefaultFragmentCacheConns, negative turns the cache off.
	FragmentCacheConns int
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
	// Allocator is used for everything the worker allocates in Go: reading
	// data files and merging result batches. Defaults to
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Budget, when set, accounts each fragment's Go-side Arrow buffers
	// (scans decoded ahead, pulled children, merged results) to its query
	// and the process, allocating through the budget's allocator; a
	// fragment past either limit fails with ResourceExhausted (memory.go).
	Budget *membudget.Budget
	// BatchRows is the row count small result chunks are merged toward;
	// 0 means DefaultBatchRows.
	BatchRows int
	// BatchBytes cuts a batch short of BatchRows where its rows would pass
	// this many bytes; 0 means DefaultBatchBytes.
	BatchBytes int64
	// WriteRowGroupBytes bounds the rows a write fragment buffers per
	// open data file before it flushes them as a Parquet row group (rows
	// sized by the fragment's first batch); 0 means
	// DefaultWriteRowGroupBytes. The table's own
	// write.parquet.row-group-size-bytes still applies when smaller.
	WriteRowGroupBytes int64
	// FlushAfter is how long merged rows may wait for more before they
	// are sent short of BatchRows, so a slow fragment's first rows leave
	// early; 0 means DefaultFlushAfter.
	FlushAfter time.Duration
	// Peers says how the worker dials the peers it pulls child fragments
	// from (TLS roots, the cluster credentials calls carry).
	Peers flightclient.Options
	// Authenticated says every call was authenticated (auth's
	// interceptors are installed): tickets are then served only to the
	// principal they were planned for, or to the cluster.
	Authenticated bool
	// Audit, when set, gets one line per ticket served (audit.go).
	Audit *audit.Log
	// Admission bounds the fragments running at once (limits.go); its
	// zero value admits everything.
	Admission admit.Options
	// Metrics, when set, counts the tickets served (internal/metrics).
	Metrics *metrics.Worker
	// ExchangeMemory bounds what the worker's hash exchange producer runs
	// hold in memory together for their consumers (exchange.go), past
	// which they spill; 0 means DefaultExchangeMemory, at most half a
	// query's share of Budget when it is set.
	ExchangeMemory int64
	// ExchangeSpill bounds what all the worker's producer runs spill,
	// under the engine's spill folder, past their memory; 0 means
	// DefaultExchangeSpill, negative spills nothing.
	ExchangeSpill int64
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Key == nil {
		errs = append(errs, errors.New("worker: Key is required"))
	}
	if o.Engine == nil {
		errs = append(errs, errors.New("worker: Engine is required"))
	}
	if o.Cache == nil {
		errs = append(errs, errors.New("worker: Cache is required"))
	}
	if err := o.Admission.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.BatchRows < 0 {
		errs = append(errs, fmt.Errorf("worker: BatchRows must be >= 0, got %d", o.BatchRows))
	}
	if o.WriteRowGroupBytes < 0 {
		errs = append(errs, fmt.Errorf("worker: WriteRowGroupBytes must be >= 0, got %d", o.WriteRowGroupBytes))
	}
	if o.BatchBytes < 0 {
		errs = append(errs, fmt.Errorf("worker: BatchBytes must be >= 0, got %d", o.BatchBytes))
	}
	if o.FlushAfter < 0 {
		errs = append(errs, fmt.Errorf("worker: FlushAfter must be >= 0, got %s", o.FlushAfter))
	}
	if o.ExchangeMemory < 0 {
		errs = append(errs, fmt.Errorf("worker: ExchangeMemory must be >= 0, got %d", o.ExchangeMemory))
	}
	return errors.Join(errs...)
}

// String describes the options without the key.
func (o Options) String() string {
	return fmt.Sprintf("worker.Options{Key: %v, BatchRows: %d, BatchBytes: %d, FlushAfter: %s}", o.Key, o.BatchRows, o.BatchBytes, o.FlushAfter)
}

// Server is a worker's Flight service. It serves DoGet only; every other
// Flight method answers Unimplemented. It is safe for concurrent use.
type Server struct {
	flight.BaseFlightServer

	opts   Options
	log    *zap.Logger
	health *health.Server
	// caches are the worker's caches (queries.go).
	caches cachestats.Registry
	// reuse is the fragment cache (reuse.go); nil when off.
	reuse *connCache
	// peers are pooled Flight clients of the workers children are pulled
	// from; Close closes them.
	peers *flightclient.Pool

	// directScans counts scans that took the direct path (direct.go).
	directScans atomic.Int64

	// fragments admits the fragments that need a slot; timedOut counts
	// those their statement timeout ended (limits.go).
	fragments *admit.Limiter
	timedOut  atomic.Int64
	// ages orders the fragments on DuckDB; yielded counts those that
	// waited for older queries and ran again (yield.go).
	ages    fragmentAges
	yielded atomic.Int64

	// started is when the server was made; instance names this process
	// to coordinators (membership.InstanceHeader); revoked are the
	// dropped tables (admit.go).
	started  time.Time
	instance string
	revoked  revocations
	// queries follows the queries whose endpoints the worker serves.
	queries queryTracker
	// exchanges are the hash exchanges' producer runs (exchange.go).
	exchanges exchangeRuns

	mu      sync.Mutex
	closing bool
	calls   *drain.Calls
}

var _ flight.FlightServer = (*Server)(nil)

// errShuttingDown ends the streams in flight when the worker shuts down.
var errShuttingDown = errors.New("worker shutting down")

// New returns a worker server. Register it on a gRPC server to serve.
// DirectScans is how many scans this worker read with DuckDB's Parquet
// reader (direct.go) instead of iceberg-go's.
func (s *Server) DirectScans() int64 { return s.directScans.Load() }

func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.BatchRows == 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.FlushAfter == 0 {
		o.FlushAfter = DefaultFlushAfter
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.WriteRowGroupBytes == 0 {
		o.WriteRowGroupBytes = DefaultWriteRowGroupBytes
	}
	if o.ExchangeMemory == 0 {
		o.ExchangeMemory = DefaultExchangeMemory
	}
	if o.ExchangeSpill == 0 {
		o.ExchangeSpill = DefaultExchangeSpill
	}
	s := &Server{
		opts:   o,
		log:    o.Logger,
		health: health.NewServer(),
		calls:  drain.New(),
		peers:  flightclient.NewPool(o.Peers, DefaultPeerClients),

		started:  time.Now(),
		instance: membership.NewInstance(),
	}
	if n := o.FragmentCacheConns; n >= 0 {
		if n == 0 {
			n = DefaultFragmentCacheConns
		}
		s.reuse = newConnCache(n)
	}
	s.registerCaches()
	var err error
	if s.fragments, err = admit.New(o.Admission); err != nil {
		return nil, err
	}
	mem := o.ExchangeMemory
	if b := o.Budget; b != nil && b.QueryLimit() > 0 {
		mem = max(min(mem, b.QueryLimit()/2), 1)
	}
	if s.exchanges.memory, err = exchange.NewMemory(mem); err != nil {
		return nil, err
	}
	if o.ExchangeSpill > 0 {
		if s.exchanges.spill, err = exchange.NewSpill(o.Engine.TempDir(), o.ExchangeSpill); err != nil {
			return nil, err
		}
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(FlightServiceName, healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// Register registers the Flight service and the standard gRPC health
// service on g.
func (s *Server) Register(g *grpc.Server) {
	flight.RegisterFlightServiceServer(g, s)
	healthpb.RegisterHealthServer(g, instanceHealth{s.health, s.instance})
}

// instanceHealth is the health service answering each check with the
// process's instance id in a header, so a coordinator notices a worker
// that restarted at the same location between two checks and checks its
// key again.
type instanceHealth struct {
	*health.Server
	instance string
}

func (h instanceHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(membership.InstanceHeader, h.instance))
	return h.Server.Check(ctx, req)
}

// Drain reports NOT_SERVING on the health service but for LivenessService,
// so coordinators stop planning on the worker, and goes on serving: the
// tickets already planned on it still arrive.
func (s *Server) Drain() {
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	s.health.SetServingStatus(FlightServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
}

// WaitIdle waits until no call has been in flight for quiet, or until
// deadline (see drain.Calls.WaitIdle).
func (s *Server) WaitIdle(deadline time.Time, quiet time.Duration) bool {
	return s.calls.WaitIdle(deadline, quiet)
}

// Shutdown reports NOT_SERVING on the health service, refuses new DoGets
// and cancels every DoGet in flight, which then ends with Unavailable
// "worker shutting down". Callers then GracefulStop the gRPC server; a
// handler blocked sending to a client that stopped reading, or a health
// Watch a client keeps open, still holds GracefulStop, so bound it with a
// timeout followed by Stop.
func (s *Server) Shutdown() {
	s.health.Shutdown()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	s.calls.CancelAll(errShuttingDown)
	s.closeExchanges(errShuttingDown)
}

// Close releases what the server holds after its gRPC server stopped: the
// clients of its peers, the exchanges' producer runs (which it waits for)
// and their spill.
func (s *Server) Close() error {
	if s.reuse != nil {
		s.reuse.close()
	}
	s.closeExchanges(errShuttingDown)
	s.exchanges.wg.Wait()
	err := s.peers.Close()
	if sp := s.exchanges.spill; sp != nil {
		err = errors.Join(err, sp.Close())
	}
	return err
}

// PeerClients is how many Flight clients of its peers the worker holds
// open: 0 once Close returned and every pull has ended.
func (s *Server) PeerClients() int { return s.peers.Open() }

// begin registers a DoGet so Shutdown can cancel it. The caller calls end.
func (s *Server) begin(parent context.Context) (ctx context.Context, end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, nil, errShuttingDown
	}
	ctx, end = s.calls.Begin(parent)
	return ctx, end, nil
}

// DoGet opens the sealed ticket, loads its scans, runs its SQL and streams
// the result with the ticket's schema.
func (s *Server) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) (err error) {
	start := time.Now()
	ctx, entry := s.auditEntry(stream.Context())
	if s.opts.Audit != nil {
		// Under everything serve sends: the schema sent first
		// (flightio.SendSchema) and the merged, streamed batches after it.
		stream = &countingStream{FlightService_DoGetServer: stream, e: entry}
		defer func() { s.finish(entry, start, err) }()
	}
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return toStatus(stream.Context(), err)
	}
	defer end()
	defer func() {
		if p := recover(); p != nil {
			tracing.Logger(ctx, s.log).Error("worker: panic in DoGet", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			err = fmt.Errorf("%w: panic: %v", errInternal, p)
		}
		cancelled := err != nil && ctx.Err() != nil
		if cancelled {
			tracing.Logger(ctx, s.log).Info("worker: DoGet cancelled", zap.Error(context.Cause(ctx)))
		}
		err = toStatus(ctx, err)
		if err != nil && !cancelled {
			st := status.Convert(err)
			tracing.Logger(ctx, s.log).Info("worker: fragment failed",
				zap.String("code", st.Code().String()), zap.String("error", st.Message()))
		}
	}()
	ctx = compute.WithAllocator(ctx, s.opts.Allocator)
	return s.serve(ctx, tkt.GetTicket(), stream)
}

// query runs a fragment's SQL on DuckDB and streams its result.
func (s *Server) query(ctx context.Context, conn *engine.Conn, sql string, schema *arrow.Schema, stream flight.DataStreamWriter) (rows int64, batches int, err error) {
	return s.runQuery(ctx, conn, sql, schema, stream, false)
}

// runQuery is query; keep keeps the prepared statement on conn
// (engine.Conn.QueryKept) for the fragment cache (reuse.go).
func (s *Server) runQuery(ctx context.Context, conn *engine.Conn, sql string, schema *arrow.Schema, stream flight.DataStreamWriter, keep bool) (rows int64, batches int, err error) {
	ctx, span := tracing.Span(ctx, "duckdb")
	reused := false
	defer func() {
		span.SetAttributes(attribute.Int64("icefloe.rows", rows), attribute.Bool("icefloe.prepared_before", reused))
		tracing.End(span, err)
	}()
	var rdr array.RecordReader
	if keep {
		rdr, reused, err = conn.QueryKept(ctx, sql, s.sendOptions(ctx))
	} else {
		rdr, err = conn.Query(ctx, sql, s.sendOptions(ctx))
	}
	if err != nil {
		return 0, 0, &queryError{err: err}
	}
	defer rdr.Release()
	return s.send(ctx, schema, rdr, stream)
}

// answer loads t's scans and children into conn and streams the result
// of its SQL.
func (s *Server) answer(ctx context.Context, conn *engine.Conn, t *wire.Ticket, schema *arrow.Schema, stream flight.DataStreamWriter) (rows int64, batches int, err error) {
	ictx, span := tracing.Span(ctx, "inputs", attribute.Int("icefloe.scans", len(t.Scans)), attribute.Int("icefloe.children", len(t.Children)))
	streams, err := s.inputs(ictx, conn, t)
	tracing.End(span, err)
	if err != nil {
		return 0, 0, err
	}
	rows, batches, err = s.query(ctx, conn, t.SQL, schema, stream)
	if serr := streamsErr(streams); err != nil && serr != nil {
		// A streamed child failed: its own error, with its code.
		return rows, batches, serr
	}
	return rows, batches, err
}

// inputs loads t's scans and children into conn; the children of views
// read once stream into its query (children.go), and their readers are
// returned for their errors.
func (s *Server) inputs(ctx context.Context, conn *engine.Conn, t *wire.Ticket) ([]*chanReader, error) {
	for _, sc := range t.Scans {
		if err := s.loadScan(ctx, conn, sc, true); err != nil {
			return nil, err
		}
	}
	return s.loadChildren(ctx, conn, t)
}

// serve runs one ticket on a fresh connection.
func (s *Server) serve(ctx context.Context, sealed []byte, stream flight.DataStreamWriter) (err error) {
	start := time.Now()
	t, err := s.opts.Key.Open(sealed, start)
	if err != nil {
		return err
	}
	// The fragment's span starts once the ticket is open (it carries the
	// trace); the opening's time is an attribute.
	ctx, span := tracing.Continue(ctx, "fragment", t.Trace, attribute.String("icefloe.query_id", t.QueryID),
		attribute.Bool("icefloe.child", t.Child), attribute.Bool("icefloe.write", t.Write != nil),
		attribute.Int64("icefloe.open_us", time.Since(start).Microseconds()))
	defer func() { tracing.End(span, err) }()
	noteTicket(ctx, t)
	if err := s.admit(ctx, t); err != nil {
		return err
	}
	ctx, closeAccount := s.account(ctx, t.QueryID)
	defer closeAccount()
	ctx, q, end, err := s.queries.begin(ctx, t)
	if err != nil {
		return err
	}
	kind := ticketKind(t)
	ms := &meteredStream{DataStreamWriter: stream}
	if kind == metrics.TicketEndpoint {
		ms.q = q
	}
	err = s.limited(ctx, t, func(ctx context.Context) error { return s.run(ctx, t, ms, start) })
	err = namedResourceError(t.QueryID, err)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errQueryCancelled) {
		err = cause
	}
	if err == nil {
		files, bytes := q.read(t)
		s.opts.Metrics.Read(files, bytes)
	}
	end(err)
	var first time.Duration
	if !ms.first.IsZero() {
		first = ms.first.Sub(start)
	}
	s.opts.Metrics.Served(kind, status.Code(toStatus(ctx, err)).String(), ms.rows, ms.bytes, time.Since(start), first)
	return err
}

// run runs one admitted ticket on a fresh connection.
func (s *Server) run(ctx context.Context, t *wire.Ticket, stream flight.DataStreamWriter, start time.Time) error {
	if len(t.Schema) == 0 {
		return fmt.Errorf("%w: ticket has no result schema", wire.ErrMalformed)
	}
	schema, err := flight.DeserializeSchema(t.Schema, alloc(ctx))
	if err != nil {
		return fmt.Errorf("%w: result schema: %v", wire.ErrMalformed, err)
	}
	if t.Partition != nil {
		// The producer run has a connection of its own.
		return s.servePartition(ctx, t, schema, stream)
	}
	conn, err := s.opts.Engine.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if conn != nil { // the one open at the end (run again: a fresh one)
			conn.Close()
		}
	}()
	if t.Write != nil {
		return s.write(ctx, conn, t, stream)
	}
	// The schema goes out before any input is read: clients (and the
	// workers pulling this fragment) learn it at once and can cancel while
	// the work runs.
	if stream, err = flightio.SendSchema(stream, schema, alloc(ctx)); err != nil {
		return err
	}
	if t.Passthrough && len(t.Scans) == 1 && len(t.Children) == 0 && t.Scans[0].MetadataTable == "" {
		return s.passthrough(ctx, t.Scans[0], schema, stream)
	}
	sent := &sentRows{DataStreamWriter: stream}
	age, endAge := s.ages.start(t.QueryID)
	defer endAge()
	rows, batches, reused, err := s.answerReusing(ctx, &conn, t, schema, sent) // reuse.go
	if !reused {
		if err != nil {
			return err
		}
		rows, batches, err = s.answer(ctx, conn, t, schema, sent)
	}
	if scannedTwice(err, sent) {
		// DuckDB's plan reads a streamed view twice (children.go): run
		// once more on a fresh connection, loading every view first.
		tracing.Logger(ctx, s.log).Info("worker: a streamed view is read twice; loading the views instead",
			zap.String("query", t.QueryID), zap.Error(err))
		conn.Close()
		conn = nil
		ctx = withoutStreams(ctx)
		if conn, err = s.opts.Engine.Conn(ctx); err != nil {
			return err
		}
		sent.DataStreamWriter = flightio.Again(stream)
		rows, batches, err = s.answer(ctx, conn, t, schema, sent)
	}
	if yields(err, sent) {
		// DuckDB's memory or spill ran out (yield.go): when older queries
		// hold them, wait for those and run once more on a fresh
		// connection (the failed one holds the temp tables it loaded).
		if older := s.ages.older(age, t.QueryID); len(older) > 0 {
			tracing.Logger(ctx, s.log).Info("worker: out of DuckDB memory or spill while older queries run; waiting for them to run again",
				zap.String("query", t.QueryID), zap.Int("older", len(older)), zap.Error(err))
			conn.Close()
			conn = nil
			waitFor(ctx, older, yieldWait)
			s.yielded.Add(1)
			s.opts.Metrics.Yielded()
			if conn, err = s.opts.Engine.Conn(ctx); err != nil {
				return err
			}
			sent.DataStreamWriter = flightio.Again(stream)
			rows, batches, err = s.answer(ctx, conn, t, schema, sent)
		}
	}
	if err != nil {
		return err
	}
	tracing.Logger(ctx, s.log).Debug("worker: ticket served", zap.String("query", t.QueryID),
		zap.Int("scans", len(t.Scans)), zap.Int64("rows", rows), zap.Int("batches", batches),
		zap.Duration("took", time.Since(start)))
	return nil
}
