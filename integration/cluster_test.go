package integration

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/streamidle"
)

// clusterConfig configures StartCluster.
type clusterConfig struct {
	workers  int
	demo     bool
	noDirect bool
	dataDir  string
	catalogs []catalog.Config
	limits   cluster.Limits
	memory   string
	metrics  prometheus.Registerer
	rest     bool
	group    int64
	// resultCache keeps the coordinator's result cache on (see
	// ResultCache).
	resultCache bool
}

// Option changes how StartCluster builds the cluster.
type Option func(*clusterConfig)

// Workers sets the number of workers.
func Workers(n int) Option { return func(c *clusterConfig) { c.workers = n } }

// Demo seeds the demo tables.
func Demo() Option { return func(c *clusterConfig) { c.demo = true } }

// DataDir sets the cluster's data directory (catalog.db and the
// warehouse), for tests that read it with another engine.
func DataDir(dir string) Option { return func(c *clusterConfig) { c.dataDir = dir } }

// IcebergGoReads makes the workers read every file with iceberg-go, as
// for object stores (no direct Parquet scans, no gathering worker that
// reads its inputs itself).
func IcebergGoReads() Option { return func(c *clusterConfig) { c.noDirect = true } }

// Catalogs mounts more catalogs besides the embedded one.
func Catalogs(cfgs ...catalog.Config) Option {
	return func(c *clusterConfig) { c.catalogs = append(c.catalogs, cfgs...) }
}

// WithLimits sets the cluster's admission limits and statement timeout.
func WithLimits(l cluster.Limits) Option { return func(c *clusterConfig) { c.limits = l } }

// WorkerMemory sets each worker's DuckDB memory_limit (default 1GB).
func WorkerMemory(limit string) Option { return func(c *clusterConfig) { c.memory = limit } }

// RESTCatalog serves the Iceberg REST catalog on 127.0.0.1:0
// (Coordinator.RESTURL).
func RESTCatalog() Option { return func(c *clusterConfig) { c.rest = true } }

// ResultCache keeps the coordinator's result cache on. Test clusters run
// without it unless asked: a cacheable one-endpoint query is read through
// the coordinator, and most tests are about what the workers serve.
func ResultCache() Option { return func(c *clusterConfig) { c.resultCache = true } }

// WithMetrics registers the cluster's metrics on reg.
func WithMetrics(reg prometheus.Registerer) Option { return func(c *clusterConfig) { c.metrics = reg } }

// GroupBytes sets the size a scan's task groups aim for
// (planner.Options.TargetGroupBytes); 1 plans one group per file.
func GroupBytes(n int64) Option { return func(c *clusterConfig) { c.group = n } }

// StartCluster starts a coordinator and workers in this process on
// 127.0.0.1:0 over a fresh embedded catalog, and stops them when t ends.
func StartCluster(t testing.TB, opts ...Option) *cluster.Standalone {
	t.Helper()
	cfg := clusterConfig{workers: 2, memory: "1GB"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.dataDir == "" {
		cfg.dataDir = t.TempDir()
	}
	if cfg.limits.StreamIdleTimeout == 0 {
		// Every stream runs through the idle cut, as in the binary.
		cfg.limits.StreamIdleTimeout = streamidle.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen:       "127.0.0.1:0",
		WorkerHost:   "127.0.0.1",
		Workers:      cfg.workers,
		DataDir:      cfg.dataDir,
		Demo:         cfg.demo,
		WorkerEngine: engine.Options{Threads: 2, MemoryLimit: cfg.memory},
		NoDirectScan: cfg.noDirect,
		Catalogs:     cfg.catalogs,
		Limits:       cfg.limits,
		Metrics:      cfg.metrics,
		REST:         restOptions(cfg.rest),

		TargetGroupBytes: cfg.group,
		ResultCacheBytes: resultCacheBytes(cfg.resultCache),
	})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	return s
}

// restOptions serve the REST catalog on a free port when on.
func restOptions(on bool) cluster.RESTOptions {
	if !on {
		return cluster.RESTOptions{}
	}
	return cluster.RESTOptions{Listen: "127.0.0.1:0"}
}

// adbcConn opens an ADBC Flight SQL connection to the coordinator, with
// the extra database options given.
func adbcConn(t testing.TB, addr string, extra ...map[string]string) adbc.Connection {
	t.Helper()
	o := map[string]string{adbc.OptionKeyURI: "grpc://" + addr}
	for _, e := range extra {
		maps.Copy(o, e)
	}
	return openADBC(t, o)
}

// openADBC opens an ADBC Flight SQL database with dbOpts and one
// connection of it, both closed when t ends.
func openADBC(t testing.TB, dbOpts map[string]string) adbc.Connection {
	t.Helper()
	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(dbOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// TestWorkerClosesPeerClients: a worker that gathered pulled its children
// through pooled Flight clients of its peers; stopping the worker closes
// them.
func TestWorkerClosesPeerClients(t *testing.T) {
	s := StartCluster(t, Workers(2), IcebergGoReads())
	cnxn := adbcConn(t, s.Addr())
	seedTableFiles(t, cnxn, "t", 400, 100)
	// A window over the whole table gathers: one worker pulls every
	// group's child fragment from the workers.
	got := mustQuery(t, cnxn, `SELECT count(*), max(rn) FROM (SELECT row_number() OVER (ORDER BY id) AS rn FROM t)`)
	if want := "400 | 400"; len(got.rows) != 1 || got.rows[0] != want {
		t.Fatalf("gather answered %v, want %s", got.rows, want)
	}
	open := 0
	for _, w := range s.Workers {
		open += w.PeerClients()
	}
	if open == 0 {
		t.Fatal("no worker holds a client of a peer after a gather: the test pulls no children")
	}
	if err := cnxn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, w := range s.Workers {
		if n := w.PeerClients(); n != 0 {
			t.Errorf("worker %d still holds %d clients of its peers after it stopped", i, n)
		}
	}
}

// resultCacheBytes is the coordinator's ResultCacheBytes for a test
// cluster: the default bound when on, off otherwise.
func resultCacheBytes(on bool) int64 {
	if on {
		return 0
	}
	return -1
}
