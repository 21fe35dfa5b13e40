package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/flightsql"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/membership"
	"github.com/icefloe/icefloe/internal/metrics"
	"github.com/icefloe/icefloe/restcatalog"
	"github.com/icefloe/icefloe/wire"
)

// Defaults of the role commands.
const (
	defaultListen  = "127.0.0.1:32010"
	defaultDataDir = "./icefloe-data"
	defaultWorkers = 2
)

func newLogger(stderr io.Writer, level zapcore.LevelEnabler) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), level)
	return zap.New(scrubCore{core})
}

// scrubCore removes the catalogs' secrets (catalog.ScrubText) from every
// message and text field it logs: errors from catalog libraries may quote
// the URLs and connection strings they were given.
type scrubCore struct{ zapcore.Core }

func (c scrubCore) With(fields []zapcore.Field) zapcore.Core {
	return scrubCore{c.Core.With(scrubFields(fields))}
}

func (c scrubCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c scrubCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	ent.Message = catalog.ScrubText(ent.Message)
	return c.Core.Write(ent, scrubFields(fields))
}

func scrubFields(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		switch f.Type {
		case zapcore.StringType:
			f.String = catalog.ScrubText(f.String)
		case zapcore.ErrorType:
			if err, ok := f.Interface.(error); ok {
				f = zap.String(f.Key, catalog.ScrubText(err.Error()))
			}
		case zapcore.StringerType:
			if s, ok := f.Interface.(fmt.Stringer); ok {
				f = zap.String(f.Key, catalog.ScrubText(s.String()))
			}
		}
		out[i] = f
	}
	return out
}

// common flags of the server roles.
type roleFlags struct {
	fs       *flag.FlagSet
	config   *string
	listen   *string
	dataDir  *string
	drain    *time.Duration
	httpAddr *string
	restAddr *string
	insecure *bool
	cfg      Config
}

func newRoleFlags(name string, stderr io.Writer) *roleFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &roleFlags{
		fs:       fs,
		config:   fs.String("config", "", "optional YAML config file"),
		listen:   fs.String("listen", defaultListen, "host:port to listen on"),
		dataDir:  fs.String("data-dir", defaultDataDir, "folder for the embedded catalog, warehouse and spill files"),
		drain:    fs.Duration("drain-timeout", flightsql.DefaultDrainGrace, "on SIGTERM, how long work in flight may finish before it ends with UNAVAILABLE"),
		httpAddr: fs.String("http-addr", "", httpAddrUsage),
		restAddr: fs.String("rest-addr", "", restAddrUsage),

		insecure: fs.Bool("insecure-no-auth", false, insecureUsage),
	}
}

// parse parses flags and the config file; flags set on the command line win.
func (r *roleFlags) parse(args []string) error {
	if err := r.fs.Parse(args); err != nil {
		return err
	}
	if r.fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(r.fs.Args(), " "))
	}
	cfg, err := loadConfig(*r.config)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	r.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["listen"] && cfg.Listen != "" {
		*r.listen = cfg.Listen
	}
	if !set["data-dir"] && cfg.DataDir != "" {
		*r.dataDir = cfg.DataDir
	}
	if !set["drain-timeout"] && cfg.DrainTimeout > 0 {
		*r.drain = cfg.DrainTimeout
	}
	if !set["http-addr"] && cfg.HTTPListen != "" {
		*r.httpAddr = cfg.HTTPListen
	}
	if !set["rest-addr"] && cfg.REST != nil && cfg.REST.Listen != "" {
		*r.restAddr = cfg.REST.Listen
	}
	r.cfg = cfg
	if err := checkListen(*r.listen); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if *r.httpAddr != "" {
		if err := checkListen(*r.httpAddr); err != nil {
			return fmt.Errorf("--http-addr: %w", err)
		}
	}
	if *r.restAddr != "" {
		if err := checkListen(*r.restAddr); err != nil {
			return fmt.Errorf("--rest-addr: %w", err)
		}
	}
	_, _, err = r.httpListen()
	return err
}

// restAddrUsage describes --rest-addr.
const restAddrUsage = "host:port of the Iceberg REST catalog (Spark, pyiceberg, Trino; docs/rest-catalog.md), with the Flight listener's TLS and authentication; empty: none"

// rest configures the coordinator's Iceberg REST catalog.
func (r *roleFlags) rest() cluster.RESTOptions {
	o := cluster.RESTOptions{Listen: *r.restAddr}
	if r.cfg.REST != nil {
		o.Credentials = restcatalog.Credentials(r.cfg.REST.Credentials)
	}
	return o
}

// directParquetUsage describes the workers' --direct-parquet flag.
const directParquetUsage = "workers read data files in local warehouses (the data dir's and configured catalogs' file:// warehouses), and their cached copies of object-store files, with DuckDB's Parquet reader; false: always with iceberg-go's"

// dataCacheFlags are the workers' data cache flags.
type dataCacheFlags struct {
	dir   *string
	bytes *int64
}

func (r *roleFlags) dataCacheFlags() dataCacheFlags {
	return dataCacheFlags{
		dir:   r.fs.String("data-cache-dir", "", "folder of the workers' local copies of object-store data files (default: <data-dir>/cache)"),
		bytes: r.fs.Int64("data-cache-bytes", datacache.DefaultMaxBytes, "bound of each worker's data cache in bytes; 0 turns it off"),
	}
}

// dataCache resolves the data cache flags against the config: the
// directory (absolute) and bound, or "" when the cache is off.
func (r *roleFlags) dataCache(f dataCacheFlags) (dir string, bytes int64, err error) {
	set := map[string]bool{}
	r.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	dir, bytes = *f.dir, *f.bytes
	if !set["data-cache-dir"] && r.cfg.DataCacheDir != "" {
		dir = r.cfg.DataCacheDir
	}
	if !set["data-cache-bytes"] && r.cfg.DataCacheBytes != nil {
		bytes = *r.cfg.DataCacheBytes
	}
	if bytes < 0 {
		return "", 0, fmt.Errorf("--data-cache-bytes: must be >= 0 (0 turns the cache off), got %d", bytes)
	}
	if bytes == 0 {
		return "", 0, nil
	}
	if dir == "" {
		dir = filepath.Join(*r.dataDir, "cache")
	}
	dir, err = filepath.Abs(dir)
	return dir, bytes, err
}

// engineOptions configure one DuckDB of the process: its share of the
// memory budget and spill disk (membudget.Split), unless memory_limit
// sets each DuckDB's limit.
func (r *roleFlags) engineOptions(limit, temp int64) engine.Options {
	eo := engine.Options{Threads: r.cfg.Threads, MemoryLimit: r.cfg.MemoryLimit, MaxTempDirSize: temp}
	if eo.MemoryLimit == "" {
		eo.MemoryLimit = fmt.Sprintf("%dKiB", max(limit, engine.MinMemoryLimit)>>10)
	}
	return eo
}

// key returns the cluster key from config or environment; required says
// whether a random one may be made instead.
func (r *roleFlags) key(required bool) (*wire.Key, error) {
	secret := r.cfg.TicketKey
	if secret == "" {
		secret = os.Getenv(TicketKeyEnv)
	}
	if secret == "" {
		if required {
			return nil, fmt.Errorf("a ticket key is required: set ticket_key in the config or %s", TicketKeyEnv)
		}
		return wire.RandomKey()
	}
	return wire.KeyFromPassphrase(secret)
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	r := newRoleFlags("serve", stderr)
	workers := r.fs.Int("workers", defaultWorkers, "number of in-process workers, each on its own port")
	demo := r.fs.Bool("demo", false, "seed the demo tables (once)")
	advertise := r.fs.String("advertise-host", "", "host clients reach the workers at (default: the listen host, or 127.0.0.1 when it is unspecified)")
	direct := r.fs.Bool("direct-parquet", true, directParquetUsage)
	dcFlags := r.dataCacheFlags()
	devTLS := r.fs.Bool("tls", false, "TLS on every listener with a throwaway CA and certificate made in <data-dir>/tls (clients trust tls/ca.pem)")
	if err := r.parse(args); err != nil {
		return err
	}
	cacheDir, cacheBytes, err := r.dataCache(dcFlags)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	r.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["workers"] && r.cfg.Workers > 0 {
		*workers = r.cfg.Workers
	}
	key, err := r.key(false)
	if err != nil {
		return err
	}
	log, ready := startLogger(stderr)
	defer log.Sync()
	stopTracing, err := r.startTracing(ctx, "icefloe", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	host, _, err := splitHost(*r.listen)
	if err != nil {
		return err
	}
	if *advertise == "" {
		*advertise = host
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			*advertise = "127.0.0.1"
		}
	}
	sec, err := r.security(key, log, *devTLS, []string{*advertise})
	if err != nil {
		return err
	}
	defer sec.Audit.Close()
	reg := newMetricsRegistry()
	mem, err := r.cfg.Limits.memory(true, *workers)
	if err != nil {
		return err
	}
	lim := r.cfg.Limits.limits()
	if err := applyMemory(mem, &lim, reg); err != nil {
		return err
	}
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen:             *r.listen,
		WorkerHost:         host,
		AdvertiseHost:      *advertise,
		Workers:            *workers,
		DataDir:            *r.dataDir,
		Demo:               *demo,
		Key:                key,
		WorkerEngine:       r.engineOptions(mem.Worker, mem.WorkerTemp),
		CoordinatorEngine:  r.engineOptions(mem.Planner, mem.PlannerTemp),
		Logger:             log,
		Catalogs:           r.cfg.Catalogs,
		MetadataCacheBytes: r.cfg.MetadataCacheBytes,
		ResultCacheBytes:   r.cfg.resultCacheBytes(),
		NoDirectScan:       !*direct,
		NoDataCache:        cacheDir == "",
		DataCacheDir:       cacheDir,
		DataCacheBytes:     cacheBytes,
		Security:           sec,
		TicketTTL:          r.cfg.TicketTTL,
		Limits:             lim,
		Metrics:            reg,
		REST:               r.rest(),

		BroadcastBytes:    r.cfg.BroadcastBytes,
		ShuffleBytes:      r.cfg.ShuffleBytes,
		ShufflePartitions: r.cfg.ShufflePartitions,
	})
	if err != nil {
		return err
	}
	web, err := r.startCoordinatorHTTP(reg, sec, s.Coordinator)
	if err != nil {
		s.Close()
		return err
	}
	defer web.Close()
	var locs []string
	for _, w := range s.Workers {
		locs = append(locs, w.Location())
	}
	ready()
	log.Info("icefloe ready",
		zap.String("coordinator", s.Coordinator.Scheme+s.Addr()),
		zap.String("rest", s.Coordinator.RESTURL()),
		zap.Bool("auth", sec.Auth != nil),
		zap.Strings("workers", locs),
		zap.Strings("catalogs", s.Mounts.Names()),
		zap.String("data_dir", *r.dataDir),
		zap.String("http", web.Addr()))
	<-ctx.Done()
	log.Info("draining", zap.Duration("drain_timeout", *r.drain))
	s.Drain(*r.drain, flightsql.DefaultDrainQuiet)
	log.Info("shutting down")
	return s.Close()
}

func runCoordinator(ctx context.Context, args []string, stderr io.Writer) error {
	r := newRoleFlags("coordinator", stderr)
	var workerAddrs, directDirs stringList
	r.fs.Var(&workerAddrs, "worker", "a worker's address host:port or grpc://host:port (repeat for each); workers may also announce themselves")
	workerDNS := r.fs.String("worker-dns", "", "host:port: the workers are every address host resolves to (e.g. a Kubernetes headless service), resolved again every 5s")
	r.fs.Var(&directDirs, "direct-dir", "a local warehouse directory every worker reads with DuckDB's Parquet reader (same path on every host; repeat for each): gathered queries over it are read in place by one worker")
	workerCache := r.fs.Bool("worker-data-cache", true, "the workers run with a data cache and direct Parquet scans (their defaults): gathered queries over object-store tables are read in place by one worker, from its copies")
	check := r.fs.Bool("check", false, checkUsage)
	if err := r.parse(args); err != nil {
		return err
	}
	if len(workerAddrs) == 0 {
		workerAddrs = r.cfg.WorkerAddresses
	}
	if *workerDNS == "" {
		*workerDNS = r.cfg.WorkerDNS
	}
	key, err := r.key(true)
	if err != nil {
		return err
	}
	log, ready := startLogger(stderr)
	defer log.Sync()
	if *check {
		return r.preflight(key, log)
	}
	stopTracing, err := r.startTracing(ctx, "icefloe-coordinator", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	sec, err := r.security(key, log, false, nil)
	if err != nil {
		return err
	}
	defer sec.Audit.Close()
	cat, props, err := catalog.OpenLocal(ctx, *r.dataDir)
	if err != nil {
		return err
	}
	mounts := catalog.NewMounts()
	mounts.SetCache(catalog.NewMetadataCache(r.cfg.MetadataCacheBytes))
	defer mounts.Close()
	if err := mounts.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		return err
	}
	if err := cluster.MountCatalogs(ctx, mounts, r.cfg.Catalogs); err != nil {
		return err
	}
	pool, err := r.workerPool(key, workerAddrs, *workerDNS, sec, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pool.Start(ctx); err != nil {
		return err
	}
	reg := newMetricsRegistry()
	mem, err := r.cfg.Limits.memory(true, 0)
	if err != nil {
		return err
	}
	lim := r.cfg.Limits.limits()
	if err := applyMemory(mem, &lim, reg); err != nil {
		return err
	}
	c, err := cluster.StartCoordinator(ctx, cluster.CoordinatorOptions{
		Listen:         *r.listen,
		Key:            key,
		Mounts:         mounts,
		Workers:        pool,
		Membership:     pool,
		DefaultCatalog: catalog.LocalCatalogName,
		DefaultSchema:  catalog.DefaultSchema,
		Engine:         r.engineOptions(mem.Planner, mem.PlannerTemp),
		Logger:         log,
		DirectDirs:     directDirs,
		DataCache:      *workerCache,
		Security:       sec,
		TicketTTL:      r.cfg.TicketTTL,
		Limits:         lim,
		Metrics:        reg,
		REST:           r.rest(),

		ResultCacheBytes:  r.cfg.resultCacheBytes(),
		BroadcastBytes:    r.cfg.BroadcastBytes,
		ShuffleBytes:      r.cfg.ShuffleBytes,
		ShufflePartitions: r.cfg.ShufflePartitions,
	})
	if err != nil {
		return err
	}
	web, err := r.startCoordinatorHTTP(reg, sec, c)
	if err != nil {
		c.Close()
		return err
	}
	defer web.Close()
	ready()
	log.Info("icefloe coordinator ready", zap.String("coordinator", c.Scheme+c.Addr), zap.String("rest", c.RESTURL()),
		zap.Strings("workers", pool.Known()), zap.String("worker_dns", *workerDNS), zap.Bool("auth", sec.Auth != nil),
		zap.String("http", web.Addr()))
	<-ctx.Done()
	log.Info("draining", zap.Duration("drain_timeout", *r.drain))
	if n := c.Drain(*r.drain, flightsql.DefaultDrainQuiet); n > 0 {
		log.Warn("drain timeout: statements cancelled with UNAVAILABLE", zap.Int("cancelled", n))
	}
	log.Info("shutting down")
	return c.Close()
}

// workerPool is the coordinator's pool: listed workers, a DNS name, and
// workers that announce themselves.
//
// The pool dials the workers through internal/flightclient with sec's
// client: the workers' CA and the cluster token the key check carries.
func (r *roleFlags) workerPool(key *wire.Key, addrs []string, dnsName string, sec cluster.Security, log *zap.Logger) (*fleet.WorkerPool, error) {
	var locs []string
	for _, a := range addrs {
		if !strings.Contains(a, "://") {
			// With TLS on, the workers run it too.
			a = sec.Scheme() + a
		}
		locs = append(locs, a)
	}
	opts := []fleet.PoolOption{fleet.WithPoolLogger(log), fleet.WithAnnouncements(), fleet.WithClient(sec.Client())}
	if r.cfg.HealthInterval > 0 {
		opts = append(opts, fleet.WithHealthInterval(r.cfg.HealthInterval))
	}
	if dnsName != "" {
		d, err := membership.NewDNS(membership.DNSOptions{Target: dnsName, Scheme: sec.Scheme(), Logger: log})
		if err != nil {
			return nil, err
		}
		opts = append(opts, fleet.WithDNS(d))
	}
	return fleet.NewWorkerPool(key, locs, opts...)
}

func runWorker(ctx context.Context, args []string, stderr io.Writer) error {
	r := newRoleFlags("worker", stderr)
	direct := r.fs.Bool("direct-parquet", true, directParquetUsage)
	dcFlags := r.dataCacheFlags()
	var announce stringList
	r.fs.Var(&announce, "announce", "a coordinator's address host:port or grpc://host:port to join (repeat for each): the worker announces itself every 2s and tells it when it drains")
	advertise := r.fs.String("advertise-host", "", "host coordinators and clients reach this worker at (default: the listen host)")
	check := r.fs.Bool("check", false, checkUsage)
	if err := r.parse(args); err != nil {
		return err
	}
	if *r.restAddr != "" {
		return errors.New("--rest-addr (rest.listen): the Iceberg REST catalog runs on the coordinator, not on a worker")
	}
	cacheDir, cacheBytes, err := r.dataCache(dcFlags)
	if err != nil {
		return err
	}
	if len(announce) == 0 {
		announce = r.cfg.Announce
	}
	if *advertise == "" {
		*advertise = r.cfg.AdvertiseHost
	}
	reg := newMetricsRegistry()
	mem, err := r.cfg.Limits.memory(false, 1)
	if err != nil {
		return err
	}
	lim := r.cfg.Limits.limits()
	if err := applyMemory(mem, &lim, reg); err != nil {
		return err
	}
	eo := r.engineOptions(mem.Worker, mem.WorkerTemp)
	if *direct {
		abs, err := filepath.Abs(*r.dataDir)
		if err != nil {
			return err
		}
		eo.ReadDirs = cluster.LocalWarehouses(map[string]string{"warehouse": filepath.Join(abs, "warehouse")}, r.cfg.Catalogs)
	}
	key, err := r.key(true)
	if err != nil {
		return err
	}
	log, ready := startLogger(stderr)
	defer log.Sync()
	if *check {
		return r.preflight(key, log)
	}
	stopTracing, err := r.startTracing(ctx, "icefloe-worker", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	sec, err := r.security(key, log, false, nil)
	if err != nil {
		return err
	}
	defer sec.Audit.Close()
	for i, a := range announce {
		if !strings.Contains(a, "://") {
			// With TLS on, the coordinators run it too.
			announce[i] = sec.Scheme() + a
		}
	}
	w, err := cluster.StartWorker(ctx, cluster.WorkerOptions{
		Listen:        *r.listen,
		AdvertiseHost: *advertise,
		Key:           key,
		Engine:        eo,
		Logger:        log,
		Announce:      announce,
		Security:      sec,
		Limits:        lim,
		Metrics:       metrics.NewWorker(reg),

		MetadataCacheBytes: r.cfg.MetadataCacheBytes,
		DataCache:          datacache.Options{Dir: cacheDir, MaxBytes: cacheBytes},
	})
	if err != nil {
		return err
	}
	web, err := r.startHTTP(reg, sec, nil)
	if err != nil {
		w.Close()
		return err
	}
	defer web.Close()
	ready()
	log.Info("icefloe worker ready", zap.String("worker", w.Location()), zap.Strings("announce", announce), zap.String("http", web.Addr()))
	<-ctx.Done()
	log.Info("draining", zap.Duration("drain_timeout", *r.drain))
	w.Drain(*r.drain, flightsql.DefaultDrainQuiet)
	log.Info("shutting down")
	return w.Close()
}

func runConfig(args []string, stdout io.Writer) error {
	if len(args) != 2 || args[0] != "check" {
		return errors.New("usage: icefloe config check FILE")
	}
	cfg, err := loadConfig(args[1])
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, cfg.effectiveText())
	return nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func splitHost(addr string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}
