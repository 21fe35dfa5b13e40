// Package cluster assembles icefloe's roles — a coordinator and workers —
// from the library packages and runs them on real listeners. The binary's
// serve, coordinator and worker commands and the in-process test cluster
// all start through here, so tests run exactly what users run.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/flightsql"
	"github.com/icefloe/icefloe/internal/cachestats"
	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/flightclient"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/metrics"
	"github.com/icefloe/icefloe/internal/queryreg"
	"github.com/icefloe/icefloe/internal/resultcache"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/restcatalog"
	"github.com/icefloe/icefloe/statement"
	"github.com/icefloe/icefloe/wire"
	"github.com/icefloe/icefloe/worker"
)

// Defaults.
const (
	DefaultShutdownGrace  = 5 * time.Second
	DefaultWorkerMemory   = "2GB"
	DefaultPlannerMemory  = "512MB"
	DefaultMaxMessageSize = 64 << 20
)

// WorkerOptions configure one worker.
type WorkerOptions struct {
	// Listen is host:port; port 0 picks a free one.
	Listen string
	// AdvertiseHost is the host put in the worker's location, for when it
	// listens on an unspecified address; empty means the listen host.
	AdvertiseHost string
	Key           *wire.Key
	Engine        engine.Options
	Logger        *zap.Logger
	// MetadataCacheBytes bounds the worker's metadata cache; 0 means
	// catalog.DefaultMetadataCacheBytes.
	MetadataCacheBytes int64
	// DataCache configures the worker's disk cache of object-store data
	// files; an empty Dir turns it off. When the worker reads local
	// Parquet directly (Engine.ReadDirs set), the cache's directory is
	// added to ReadDirs so DuckDB reads the copies the same way.
	DataCache datacache.Options
	// Security secures the worker's listener and its pulls from peers.
	Security Security
	// Announce are coordinator locations the worker announces itself to
	// (and tells when it drains); AnnounceInterval is how often (0 means
	// membership.DefaultAnnounceInterval).
	Announce         []string
	AnnounceInterval time.Duration
	// Limits bound the worker's fragments (Limits.Fragments).
	Limits Limits
	// Metrics, when set, gets the worker's metrics (shared by the workers
	// of one process).
	Metrics *metrics.Worker
	// ExchangeMemory bounds what the worker's hash exchange producer runs
	// hold in memory before they spill (worker.Options.ExchangeMemory); 0
	// is the default.
	ExchangeMemory int64
}

// Worker is a running worker.
type Worker struct {
	Addr   string // host:port clients reach it at
	scheme string
	srv    *worker.Server
	grpc   *grpc.Server
	engine *engine.Engine
	done   chan error
	cache  *catalog.MetadataCache
	data   *datacache.Cache // nil without a data cache
	log    *zap.Logger
	stop   chan struct{} // ends the cache logger
	// announcer tells the coordinators about the worker; nil without
	// Announce.
	announcer *membership.Announcer
	// closeOnce makes Close idempotent: tests close a worker mid-statement
	// and the cluster closes it again at the end.
	closeOnce sync.Once
	closeErr  error
}

// DirectScans is how many scans the worker read with DuckDB's Parquet
// reader (see worker/direct.go).
func (w *Worker) DirectScans() int64 { return w.srv.DirectScans() }

// Exchanges is what the worker's hash exchange producers did (see
// worker.Server.Exchanges).
func (w *Worker) Exchanges() worker.ExchangeStats { return w.srv.Exchanges() }

// TimedOutFragments is how many fragments the worker ended because their
// statement timeout passed.
func (w *Worker) TimedOutFragments() int64 { return w.srv.TimedOutFragments() }

// PeerClients is how many Flight clients of its peers the worker holds
// open (see worker.Server.PeerClients).
func (w *Worker) PeerClients() int { return w.srv.PeerClients() }

// Location is the worker's Flight location URI (grpc+tls:// with TLS).
func (w *Worker) Location() string { return w.scheme + w.Addr }

// StartWorker starts a worker and returns once it listens.
func StartWorker(ctx context.Context, o WorkerOptions) (*Worker, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Engine.MemoryLimit == "" {
		o.Engine.MemoryLimit = DefaultWorkerMemory
	}
	lis, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("worker listen %s: %w", o.Listen, err)
	}
	addr := lis.Addr().String()
	if o.AdvertiseHost != "" {
		_, port, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort(o.AdvertiseHost, port)
	}
	var data *datacache.Cache
	if o.DataCache.Dir != "" {
		if data, err = datacache.Open(o.DataCache); err != nil {
			lis.Close()
			return nil, err
		}
		if len(o.Engine.ReadDirs) > 0 {
			o.Engine.ReadDirs = append(slices.Clone(o.Engine.ReadDirs), data.Dir())
		}
	}
	eng, err := engine.Open(ctx, o.Engine)
	if err != nil {
		lis.Close()
		return nil, err
	}
	cache := catalog.NewMetadataCache(o.MetadataCacheBytes)
	srv, err := worker.New(worker.Options{
		Key:       o.Key,
		Engine:    eng,
		Cache:     cache,
		DataCache: data,
		Logger:    o.Logger,
		Allocator: memory.DefaultAllocator,
		Budget:    o.Limits.Memory,
		Peers:     o.Security.Client(),
		Audit:     o.Security.Audit.WithNode("worker " + addr),

		Authenticated: o.Security.Auth != nil,
		Admission:     o.Limits.Fragments,
		Metrics:       o.Metrics,
		// Exchanges spill under the engine's folder, as much as DuckDB may.
		ExchangeSpill:  o.Engine.MaxTempDirSize,
		ExchangeMemory: o.ExchangeMemory,
	})
	if err != nil {
		lis.Close()
		eng.Close()
		return nil, err
	}
	src := metrics.WorkerSource{Stats: srv.Stats, DuckDB: duckMemory(eng), MemoryLimit: eng.MemoryLimit(), Caches: srv.Caches()}
	if data != nil {
		src.Data = data.Stats
	}
	o.Metrics.Add(src)
	g := grpc.NewServer(o.Security.serverOptions(o.Limits.idleCut(o.Logger))...)
	srv.Register(g)
	w := &Worker{Addr: addr, scheme: o.Security.Scheme(), srv: srv, grpc: g, engine: eng, done: make(chan error, 1), cache: cache, data: data, log: o.Logger, stop: make(chan struct{})}
	go w.logCachesEvery(CacheLogInterval)
	go func() { w.done <- g.Serve(lis) }()
	if len(o.Announce) > 0 {
		w.announcer, err = membership.NewAnnouncer(membership.AnnouncerOptions{
			Key: o.Key, Location: w.Location(), Coordinators: o.Announce, Interval: o.AnnounceInterval,
			// Through internal/flightclient: the coordinators' TLS roots,
			// and the cluster token their authentication asks of the
			// announcement.
			Dial:   func(loc string) (*grpc.ClientConn, error) { return flightclient.Conn(loc, o.Security.Client()) },
			Logger: o.Logger,
		})
		if err != nil {
			w.Close()
			return nil, err
		}
		w.announcer.Start(context.WithoutCancel(ctx))
	}
	return w, nil
}

// Drain takes the worker out of planning (its health turns NOT_SERVING
// and the coordinators it announces to hear at once) and goes on serving
// until no DoGet has been in flight for quiet, or grace has passed. Close
// then ends what still runs with Unavailable.
func (w *Worker) Drain(grace, quiet time.Duration) {
	w.srv.Drain()
	if w.announcer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		w.announcer.Drain(ctx)
		cancel()
	}
	w.srv.WaitIdle(time.Now().Add(grace), quiet)
}

// Close shuts the worker down: in-flight streams end with an error, then
// the server stops.
func (w *Worker) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.close() })
	return w.closeErr
}

func (w *Worker) close() error {
	if w.announcer != nil {
		w.announcer.Close()
	}
	close(w.stop)
	w.logCaches()
	w.srv.Shutdown()
	stopGracefully(w.grpc, DefaultShutdownGrace)
	err := <-w.done
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return errors.Join(err, w.srv.Close(), w.engine.Close())
}

// The worker pool is the coordinator's Membership (see CoordinatorOptions).
var _ flightsql.Membership = (*fleet.WorkerPool)(nil)

// CoordinatorOptions configure a coordinator.
type CoordinatorOptions struct {
	Listen  string
	Key     *wire.Key
	Mounts  *catalog.Mounts
	Workers planner.Workers
	// DefaultCatalog and DefaultSchema resolve unqualified names.
	DefaultCatalog string
	DefaultSchema  string
	Engine         engine.Options
	Logger         *zap.Logger
	// DirectDirs is planner.Options.DirectDirs.
	DirectDirs []string
	// TargetGroupBytes is planner.Options.TargetGroupBytes; 0 is the
	// planner's default, 1 gives one file task per group.
	TargetGroupBytes int64
	// BroadcastBytes, ShuffleBytes and ShufflePartitions are the
	// planner's join thresholds (planner.Options); 0 is the default.
	BroadcastBytes    int64
	ShuffleBytes      int64
	ShufflePartitions int
	// DataCache is planner.Options.DataCache: the workers cache
	// object-store data files and read them with DuckDB.
	DataCache bool
	// Security secures the coordinator's listener, its calls to the
	// workers and its catalogs.
	Security Security
	// TicketTTL is planner.Options.TicketTTL.
	TicketTTL time.Duration
	// Membership is flightsql.Options.Membership: the worker pool, when
	// Workers is one that takes announcements.
	Membership flightsql.Membership
	// Limits bound the coordinator's statements (Limits.Statements and
	// StatementTimeout).
	Limits Limits
	// Metrics, when set, gets the coordinator's metrics.
	Metrics prometheus.Registerer
	// REST, when its Listen is set, serves the Iceberg REST catalog.
	REST RESTOptions
	// ResultCacheBytes bounds the coordinator's result cache
	// (internal/resultcache); 0 means resultcache.DefaultMaxBytes,
	// negative turns it off.
	ResultCacheBytes int64
}

// RESTOptions configure the coordinator's Iceberg REST catalog listener
// (restcatalog): its own listener, with the Flight listener's TLS and
// authentication.
type RESTOptions struct {
	// Listen is host:port; empty serves no REST catalog.
	Listen string
	// Credentials is what a table load hands out for its files
	// (restcatalog.Options.Credentials).
	Credentials restcatalog.Credentials
}

// Coordinator is a running coordinator.
type Coordinator struct {
	Addr string
	// Scheme is grpc:// or grpc+tls://.
	Scheme string
	// Planner plans the coordinator's queries; Executor wraps it and runs
	// every other statement.
	Planner  *planner.Planner
	Executor *statement.Executor
	srv      *flightsql.Server
	health   *health.Server
	grpc     *grpc.Server
	engine   *engine.Engine
	flight   *flightclient.Pool
	done     chan error
	// Queries registers the coordinator's statements; Runtime is what the
	// system.runtime tables (and the status page) show of them and of the
	// workers.
	Queries *queryreg.Registry
	Runtime fleet.Runtime
	// Caches are the coordinator's caches (system.runtime.caches, the
	// icefloe_cache_* metrics): a cache the coordinator keeps registers
	// here.
	Caches      *cachestats.Registry
	stopRefresh context.CancelFunc
	security    Security
	// REST is the Iceberg REST catalog's listener; nil without one.
	REST *restcatalog.Listener
	// ResultCache is the coordinator's result cache; nil when it is off.
	// Its Stats are what system.runtime.caches lists of it.
	ResultCache *resultcache.Cache
}

// StartCoordinator starts the Flight SQL coordinator.
func StartCoordinator(ctx context.Context, o CoordinatorOptions) (*Coordinator, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Engine.MemoryLimit == "" {
		o.Engine.MemoryLimit = DefaultPlannerMemory
	}
	eng, err := engine.Open(ctx, o.Engine)
	if err != nil {
		return nil, err
	}
	pool := flightclient.NewPool(o.Security.Client(), 0)
	fail := func(err error) (*Coordinator, error) {
		pool.Close()
		eng.Close()
		return nil, err
	}
	rc, err := resultcache.New(resultcache.Options{MaxBytes: o.ResultCacheBytes})
	if err != nil {
		return fail(err)
	}
	reach := fleet.QueryWorkers{Workers: o.Workers, Flight: pool}
	var cm *metrics.Coordinator // set before the first statement arrives
	reg, err := queryreg.New(queryreg.Options{Workers: reach, Ended: func(i queryreg.Info) { cm.Ended(i) }})
	if err != nil {
		return fail(err)
	}
	caches := &cachestats.Registry{}
	caches.Register(cachestats.Funcs(o.Mounts.Cache().CacheStats))
	if rc != nil {
		caches.Register(cachestats.Func(func() cachestats.Stats {
			st := rc.Stats()
			return cachestats.Stats{Name: "result", Entries: st.Entries, Bytes: st.Bytes, MaxBytes: st.MaxBytes,
				Hits: st.Hits, Misses: st.Misses, Evictions: st.Evictions}
		}))
	}
	pl, err := planner.New(planner.Options{
		Caches:  caches,
		Mounts:  o.Mounts,
		Engine:  eng,
		Key:     o.Key,
		Workers: o.Workers,
		Flight:  pool,
		Policy:  o.Security.policy(),
		Logger:  o.Logger,
		Runtime: fleet.Runtime{Registry: reg, Reach: reach},

		ResultCache: rc,
		TicketTTL:   o.TicketTTL,

		TargetGroupBytes:  o.TargetGroupBytes,
		BroadcastBytes:    o.BroadcastBytes,
		ShuffleBytes:      o.ShuffleBytes,
		ShufflePartitions: o.ShufflePartitions,
		DirectDirs:        o.DirectDirs,
		DataCache:         o.DataCache,
		MaxValueBytes:     o.Limits.MaxValueBytes,
	})
	if err != nil {
		return fail(err)
	}
	if err := pl.CheckPolicy(ctx); err != nil {
		return fail(fmt.Errorf("auth.roles: %w", err))
	}
	ex := statement.New(pl)
	srv, err := flightsql.New(flightsql.Options{
		Backend:        ex,
		Capabilities:   flightsql.ExecutorCapabilities(ex),
		Mounts:         o.Mounts,
		DefaultCatalog: o.DefaultCatalog,
		DefaultSchema:  o.DefaultSchema,
		Logger:         o.Logger,
		Allocator:      memory.DefaultAllocator,
		Key:            o.Key,
		Flight:         pool,
		Auth:           o.Security.Auth,
		Policy:         o.Security.policy(),
		Audit:          o.Security.Audit.WithNode("coordinator"),
		Membership:     o.Membership,
		Queries:        reg,
		ResultCache:    rc,

		Admission:         o.Limits.Statements,
		StatementTimeout:  o.Limits.StatementTimeout,
		MaxStatementBytes: o.Limits.MaxStatementBytes,
		Budget:            o.Limits.Memory,
	})
	if err != nil {
		return fail(err)
	}
	if o.Metrics != nil {
		sources := coordinatorSources(reg, srv, reach, ex, o.Mounts)
		sources.Caches = caches
		cm = metrics.NewCoordinator(o.Metrics, sources)
		if rc != nil {
			metrics.RegisterResultCache(o.Metrics, rc.Stats)
		}
	}
	o.Security.guard(o.Mounts, ex, o.Logger)
	dropStaging(ctx, o.Mounts, o.Limits.StagingGrace, o.Logger)
	var rest *restcatalog.Listener
	if o.REST.Listen != "" {
		if rest, err = startREST(o, pl.Commits()); err != nil {
			return fail(err)
		}
	}
	lis, err := net.Listen("tcp", o.Listen)
	if err != nil {
		rest.Close(0)
		return fail(fmt.Errorf("coordinator listen %s: %w", o.Listen, err))
	}
	g := grpc.NewServer(o.Security.serverOptions(append(srv.ServerOptions(), o.Limits.idleCut(o.Logger))...)...)
	srv.Register(g)
	hs := health.NewServer()
	for _, name := range []string{"", flightServiceName, worker.LivenessService} {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(g, hs)
	c := &Coordinator{Caches: caches, Addr: lis.Addr().String(), Scheme: o.Security.Scheme(), Planner: pl, Executor: ex, srv: srv, health: hs, grpc: g, engine: eng, flight: pool, done: make(chan error, 1),
		Queries: reg, Runtime: fleet.Runtime{Registry: reg, Reach: reach}, security: o.Security, REST: rest, ResultCache: rc}
	refresh, stopRefresh := context.WithCancel(context.WithoutCancel(ctx))
	c.stopRefresh = stopRefresh
	go reg.Run(refresh, 0)
	go func() { c.done <- g.Serve(lis) }()
	return c, nil
}

// dropStaging drops, before the coordinator answers, the staging tables
// of creates that a coordinator which died left behind (catalog.Staging),
// once older than grace (DefaultStagingGrace when 0), and the folders of
// those it left without a catalog entry (catalog.SweepStagingFolders).
// Neither deletes a file any table of any mounted catalog references;
// when not every table can be seen, both leave everything for the next
// start. It logs at Warn, the start-up level, what a crash left. Bounded: a
// catalog that does not answer in time is left for the next start.
func dropStaging(ctx context.Context, mounts *catalog.Mounts, grace time.Duration, log *zap.Logger) {
	if grace == 0 {
		grace = DefaultStagingGrace
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dropped, err := mounts.DropStaging(ctx, grace)
	for _, st := range dropped {
		if st.Finished {
			log.Warn("renamed the staging table of a create or replace that committed but did not finish its rename", zap.String("table", st.String()))
			continue
		}
		log.Warn("dropped the staging table of a create that did not finish", zap.String("table", st.String()))
	}
	if err != nil {
		log.Warn("left the staging tables of creates that did not finish for the next start: whether another table holds their files cannot be told", zap.Error(err))
	}
	dirs, err := mounts.SweepStagingFolders(ctx, grace)
	for _, dir := range dirs {
		log.Warn("removed the folder of a create that did not finish and has no catalog entry", zap.String("folder", dir))
	}
	if err != nil {
		log.Warn("left the folders of creates that did not finish for the next start: whether a table holds their files cannot be told", zap.Error(err))
	}
}

// flightServiceName is the gRPC name of the Flight service, under which
// (and under "") a role's health reports whether it takes new work.
var flightServiceName = worker.FlightServiceName

// Drain turns the coordinator's readiness NOT_SERVING and drains its Flight
// service (flightsql.Server.Drain): new statements are refused with
// Unavailable, those in flight get grace to finish. It returns how many
// were cancelled.
func (c *Coordinator) Drain(grace, quiet time.Duration) int {
	c.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	c.health.SetServingStatus(flightServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	return c.srv.Drain(grace, quiet)
}

// startREST starts the coordinator's Iceberg REST catalog over its
// mounts, behind the same authentication, policy and TLS as its Flight
// listener; its commits count with the planner's.
func startREST(o CoordinatorOptions, commits *commit.Stats) (*restcatalog.Listener, error) {
	srv, err := restcatalog.New(restcatalog.Options{
		Mounts:         o.Mounts,
		DefaultCatalog: o.DefaultCatalog,
		Auth:           o.Security.Auth,
		Policy:         o.Security.policy(),
		Commits:        commits,
		Credentials:    o.REST.Credentials,
		Audit:          o.Security.Audit.WithNode("coordinator"),
		Logger:         o.Logger,
	})
	if err != nil {
		return nil, err
	}
	return srv.Listen(o.REST.Listen, o.Security.TLS)
}

// RESTURL is the base URI of the coordinator's Iceberg REST catalog; ""
// without one.
func (c *Coordinator) RESTURL() string {
	if c.REST == nil {
		return ""
	}
	return c.REST.URL()
}

// Close stops the coordinator.
func (c *Coordinator) Close() error {
	c.stopRefresh()
	restErr := c.REST.Close(DefaultShutdownGrace)
	c.health.Shutdown()
	stopGracefully(c.grpc, DefaultShutdownGrace)
	err := <-c.done
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return errors.Join(restErr, err, c.flight.Close(), c.engine.Close())
}

func stopGracefully(g *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		g.Stop()
		<-done
	}
}

// StandaloneOptions configure `icefloe serve`: a coordinator and N workers
// in one process over the embedded SQLite catalog.
type StandaloneOptions struct {
	Listen     string // coordinator host:port
	WorkerHost string // host the workers listen on (port 0 each)
	// AdvertiseHost is the host in the workers' locations; empty means
	// WorkerHost.
	AdvertiseHost string
	Workers       int
	DataDir       string
	Demo          bool
	Key           *wire.Key // nil: a random key
	WorkerEngine  engine.Options
	// CoordinatorEngine configures the coordinator's DuckDB; an empty
	// TempDir means DataDir/spill/coordinator.
	CoordinatorEngine engine.Options
	Logger            *zap.Logger
	// TargetGroupBytes, BroadcastBytes, ShuffleBytes and
	// ShufflePartitions are passed to the coordinator's planner.
	TargetGroupBytes  int64
	BroadcastBytes    int64
	ShuffleBytes      int64
	ShufflePartitions int
	// Catalogs are mounted besides the embedded one (see catalog.Open).
	Catalogs []catalog.Config
	// NoDirectScan keeps workers on iceberg-go's reader for local
	// warehouses too (by default they read local Parquet files with
	// DuckDB's; see worker/direct.go).
	NoDirectScan bool
	// MetadataCacheBytes bounds the coordinator's metadata cache and each
	// worker's, in bytes of memory held; 0 is the default
	// (catalog.DefaultMetadataCacheBytes).
	MetadataCacheBytes int64
	// NoDataCache turns the workers' data caches off; DataCacheBytes
	// bounds each one (0: datacache.DefaultMaxBytes). Worker i keeps its
	// copies in DataCacheDir/worker-i, DataDir/cache/worker-i when
	// DataCacheDir is empty.
	NoDataCache    bool
	DataCacheBytes int64
	DataCacheDir   string
	// Security secures the coordinator and every worker alike.
	Security Security
	// TicketTTL is planner.Options.TicketTTL.
	TicketTTL time.Duration
	// ResultCacheBytes is CoordinatorOptions.ResultCacheBytes.
	ResultCacheBytes int64
	// Limits bound the coordinator and every worker.
	Limits Limits
	// Metrics, when set, gets the metrics of the coordinator and of the
	// workers (added up: the process is one scrape target).
	Metrics prometheus.Registerer
	// REST configures the coordinator's Iceberg REST catalog.
	REST RESTOptions
}

// Standalone is a running single-process cluster.
type Standalone struct {
	Coordinator *Coordinator
	Workers     []*Worker
	Mounts      *catalog.Mounts

	closeOnce sync.Once
	closeErr  error
}

// Addr is the coordinator's address.
func (s *Standalone) Addr() string { return s.Coordinator.Addr }

// StartStandalone starts the embedded catalog, the workers and the
// coordinator.
func StartStandalone(ctx context.Context, o StandaloneOptions) (s *Standalone, err error) {
	if o.Workers < 1 {
		return nil, fmt.Errorf("cluster: need at least one worker, got %d", o.Workers)
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Key == nil {
		if o.Key, err = wire.RandomKey(); err != nil {
			return nil, err
		}
	}
	if o.WorkerHost == "" {
		o.WorkerHost = "127.0.0.1"
	}
	cat, props, err := catalog.OpenLocal(ctx, o.DataDir)
	if err != nil {
		return nil, err
	}
	s = &Standalone{Mounts: catalog.NewMounts()}
	s.Mounts.SetCache(catalog.NewMetadataCache(o.MetadataCacheBytes))
	if err := s.Mounts.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		return nil, err
	}
	// The returns below set s to nil: close what was started through a
	// copy.
	started := s
	defer func() {
		if err != nil {
			started.Close()
		}
	}()
	if err := MountCatalogs(ctx, s.Mounts, o.Catalogs); err != nil {
		return nil, err
	}
	if o.Demo {
		if err := catalog.SeedDemo(ctx, cat, catalog.DefaultSchema); err != nil {
			return nil, fmt.Errorf("seed demo tables: %w", err)
		}
	}
	readDirs := LocalWarehouses(props, o.Catalogs)
	var directDirs []string
	if !o.NoDirectScan && o.WorkerEngine.ReadDirs == nil {
		directDirs = readDirs
	}
	var locations []string
	var wm *metrics.Worker
	if o.Metrics != nil {
		wm = metrics.NewWorker(o.Metrics)
	}
	for i := 0; i < o.Workers; i++ {
		eo := o.WorkerEngine
		if !o.NoDirectScan && eo.ReadDirs == nil {
			eo.ReadDirs = readDirs
		}
		if eo.TempDir == "" {
			eo.TempDir = filepath.Join(o.DataDir, "spill", fmt.Sprintf("worker-%d", i))
		}
		w, err := StartWorker(ctx, WorkerOptions{
			Listen:        net.JoinHostPort(o.WorkerHost, "0"),
			AdvertiseHost: o.AdvertiseHost,
			Key:           o.Key,
			Engine:        eo,
			Logger:        o.Logger.With(zap.Int("worker", i)),
			Security:      o.Security,
			Limits:        o.Limits,
			Metrics:       wm,

			MetadataCacheBytes: o.MetadataCacheBytes,
			DataCache:          o.dataCache(i),
		})
		if err != nil {
			return nil, err
		}
		s.Workers = append(s.Workers, w)
		locations = append(locations, w.Location())
	}
	workers := fleet.NewStaticWorkers(locations...)
	for i := range workers {
		// Ports change at every start; affinity must not.
		workers[i].ID = fmt.Sprintf("worker-%d", i)
	}
	s.Coordinator, err = StartCoordinator(ctx, CoordinatorOptions{
		Listen:         o.Listen,
		Key:            o.Key,
		Mounts:         s.Mounts,
		Workers:        workers,
		DefaultCatalog: catalog.LocalCatalogName,
		DefaultSchema:  catalog.DefaultSchema,
		Engine:         o.coordinatorEngine(),
		Logger:         o.Logger,
		Security:       o.Security,
		TicketTTL:      o.TicketTTL,
		Limits:         o.Limits,
		Metrics:        o.Metrics,
		REST:           o.REST,

		ResultCacheBytes:  o.ResultCacheBytes,
		TargetGroupBytes:  o.TargetGroupBytes,
		BroadcastBytes:    o.BroadcastBytes,
		ShuffleBytes:      o.ShuffleBytes,
		ShufflePartitions: o.ShufflePartitions,
		DirectDirs:        directDirs,
		DataCache:         directDirs != nil && !o.NoDataCache,
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// coordinatorEngine is CoordinatorEngine with its spill folder filled in.
func (o StandaloneOptions) coordinatorEngine() engine.Options {
	eo := o.CoordinatorEngine
	if eo.TempDir == "" {
		eo.TempDir = filepath.Join(o.DataDir, "spill", "coordinator")
	}
	return eo
}

// dataCache is worker i's data cache configuration.
func (o StandaloneOptions) dataCache(i int) datacache.Options {
	if o.NoDataCache {
		return datacache.Options{}
	}
	dir := o.DataCacheDir
	if dir == "" {
		dir = filepath.Join(o.DataDir, "cache")
	}
	dir, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("worker-%d", i)))
	if err != nil {
		dir = filepath.Join(dir, fmt.Sprintf("worker-%d", i)) // Validate reports it
	}
	return datacache.Options{Dir: dir, MaxBytes: o.DataCacheBytes}
}

// Drain drains the coordinator and the workers together (see
// Coordinator.Drain and Worker.Drain).
func (s *Standalone) Drain(grace, quiet time.Duration) {
	var wg sync.WaitGroup
	for _, w := range s.Workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.Drain(grace, quiet) }()
	}
	s.Coordinator.Drain(grace, quiet)
	wg.Wait()
}

// Close stops workers first, so in-flight streams end with an error, then
// the coordinator and the catalogs. Closing again does nothing (tests stop
// a cluster to restart it and their cleanup closes it again).
func (s *Standalone) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Standalone) close() error {
	var errs []error
	for _, w := range s.Workers {
		errs = append(errs, w.Close())
	}
	if s.Coordinator != nil {
		errs = append(errs, s.Coordinator.Close())
	}
	errs = append(errs, s.Mounts.Close())
	return errors.Join(errs...)
}

// LocalWarehouses are the local directories of the embedded catalog's
// warehouse (props) and of configured catalogs whose warehouse is a local
// path or file:// URL: where workers may read data files with DuckDB.
func LocalWarehouses(props map[string]string, cats []catalog.Config) []string {
	var out []string
	add := func(loc string) {
		if p, ok := catalog.LocalPath(loc); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(props["warehouse"])
	for _, c := range cats {
		add(c.Properties["warehouse"])
	}
	return out
}
