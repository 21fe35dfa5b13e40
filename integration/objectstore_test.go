//go:build objectstore

package integration

// The object-store suite: tables on a real S3 server (versitygw, a Go S3
// gateway over a local folder), read and written through icefloe, with the
// workers' data caches. integration/objectstore/run installs versitygw and
// runs these tests (`go test -tags objectstore -run '^TestObjectStore'`).

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/catalog/tablecrypt"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/integration/testproc"
	"github.com/icefloe/icefloe/internal/datacache"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/wire"
)

const (
	s3Access = "icefloe-test"
	s3Secret = "icefloe-test-secret"
	s3Bucket = "warehouse"
)

// s3Server is a running versitygw with one bucket.
type s3Server struct {
	endpoint string
	client   *s3.Client
}

// startS3 runs versitygw (ICEFLOE_VERSITYGW) over a temp folder on a free
// port, creates the bucket and stops the server when t ends.
func startS3(t testing.TB) *s3Server {
	t.Helper()
	bin := os.Getenv("ICEFLOE_VERSITYGW")
	if bin == "" {
		t.Fatal("ICEFLOE_VERSITYGW is not set; run integration/objectstore/run")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testproc.FreePort(t))
	cmd := exec.Command(bin, "--access", s3Access, "--secret", s3Secret, "--port", addr, "posix", t.TempDir())
	log, exited := testproc.Start(t, cmd)
	endpoint := "http://" + addr
	testproc.WaitHTTP(t, endpoint, exited, log, 30*time.Second)
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(s3Access, s3Secret, ""),
		UsePathStyle: true,
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s3Bucket)}); err != nil {
		t.Fatalf("create bucket: %v\n%s", err, log.String())
	}
	return &s3Server{endpoint: endpoint, client: client}
}

// catalog is a SQL catalog (SQLite in dir) with its warehouse on the
// server, mounted as "s3".
func (s *s3Server) catalog(dir string) catalog.Config {
	return catalog.Config{Name: "s3", Type: catalog.TypeSQL, Properties: map[string]string{
		"uri":                  "file:" + filepath.Join(dir, "s3catalog.db") + "?_pragma=busy_timeout(5000)",
		"sql.dialect":          "sqlite",
		"warehouse":            "s3://" + s3Bucket + "/wh",
		"s3.endpoint":          s.endpoint,
		"s3.region":            "us-east-1",
		"s3.access-key-id":     s3Access,
		"s3.secret-access-key": s3Secret,
	}}
}

// key is the object key of an s3:// location in the bucket.
func (s *s3Server) key(t testing.TB, location string) string {
	t.Helper()
	k, ok := strings.CutPrefix(location, "s3://"+s3Bucket+"/")
	if !ok {
		t.Fatalf("%s is not in bucket %s", location, s3Bucket)
	}
	return k
}

func (s *s3Server) put(t testing.TB, location string, data []byte) {
	t.Helper()
	if _, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s3Bucket), Key: aws.String(s.key(t, location)), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

func (s *s3Server) get(t testing.TB, location string) []byte {
	t.Helper()
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s3Bucket), Key: aws.String(s.key(t, location))})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (s *s3Server) remove(t testing.TB, location string) {
	t.Helper()
	if _, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(s3Bucket), Key: aws.String(s.key(t, location))}); err != nil {
		t.Fatal(err)
	}
}

// s3Cluster configures startS3Cluster.
type s3Cluster struct {
	workers    int
	cacheBytes int64
	cacheDir   string
	noDirect   bool
	noCache    bool
	// props are added to the s3 catalog's properties.
	props map[string]string
	// metrics, if set, registers the cluster's metrics.
	metrics prometheus.Registerer
}

// startS3Cluster starts a standalone cluster with the server's catalog
// mounted as "s3".
func startS3Cluster(t testing.TB, srv *s3Server, dataDir string, c s3Cluster) *cluster.Standalone {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.workers == 0 {
		c.workers = 2
	}
	cfg := srv.catalog(dataDir)
	maps.Copy(cfg.Properties, c.props)
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen: "127.0.0.1:0", WorkerHost: "127.0.0.1", Workers: c.workers, DataDir: dataDir,
		WorkerEngine:   engine.Options{Threads: 2, MemoryLimit: "1GB"},
		Catalogs:       []catalog.Config{cfg},
		NoDirectScan:   c.noDirect,
		NoDataCache:    c.noCache,
		DataCacheBytes: c.cacheBytes,
		DataCacheDir:   c.cacheDir,
		Metrics:        c.metrics,
		// The data cache's tests count the workers' reads.
		ResultCacheBytes: resultCacheBytes(false),
	})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dataStats sums the workers' data cache counters.
func dataStats(t testing.TB, workers []*cluster.Worker) datacache.Stats {
	t.Helper()
	var sum datacache.Stats
	for _, w := range workers {
		st, ok := w.DataCacheStats()
		if !ok {
			t.Fatal("worker without a data cache")
		}
		sum.Hits += st.Hits
		sum.Misses += st.Misses
		sum.Uncached += st.Uncached
		sum.FetchedBytes += st.FetchedBytes
		sum.Evictions += st.Evictions
		sum.Invalidations += st.Invalidations
		sum.Entries += st.Entries
		sum.Bytes += st.Bytes
		sum.MaxBytes += st.MaxBytes
	}
	return sum
}

// liveFiles lists the data file locations of a table's current snapshot.
func liveFiles(t testing.TB, s *cluster.Standalone, ref catalog.TableRef) []string {
	t.Helper()
	ctx := context.Background()
	p, err := s.Mounts.LoadTable(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := p.Table.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

// fillTable creates s3.db.<name> (id BIGINT, g BIGINT, s VARCHAR) with one
// data file per INSERT of rows rows each: ids 0 … files×rows-1, g = id % 7.
func fillTable(t testing.TB, cnxn adbc.Connection, name string, files, rows int) {
	t.Helper()
	execUpdate(t, cnxn, "CREATE SCHEMA IF NOT EXISTS s3.db")
	execUpdate(t, cnxn, fmt.Sprintf("CREATE TABLE s3.db.%s (id BIGINT, g BIGINT, s VARCHAR)", name))
	for f := 0; f < files; f++ {
		execUpdate(t, cnxn, "INSERT INTO s3.db."+name+" VALUES "+valuesRows(f*rows, (f+1)*rows, func(i int) string {
			return fmt.Sprintf("(%d, %d, 'xxxxxxxxxxxxxxxxxxxx%d')", i, i%7, i)
		}))
	}
}

// valuesRows is a VALUES list of the rows row(i) for i in [from, to).
func valuesRows(from, to int, row func(i int) string) string {
	rows := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		rows = append(rows, row(i))
	}
	return strings.Join(rows, ", ")
}

// groupCounts is what "SELECT g, count(*) … GROUP BY g" answers over ids
// from … to-1 of fillTable.
func groupCounts(from, to int) []string {
	n := map[int]int{}
	for i := from; i < to; i++ {
		n[i%7]++
	}
	var out []string
	for g := 0; g < 7; g++ {
		if n[g] > 0 {
			out = append(out, fmt.Sprintf("%d | %d", g, n[g]))
		}
	}
	return out
}

// sumOf is what "SELECT count(*), sum(id)" answers over ids 0 … n-1.
func sumOf(n int) string { return fmt.Sprintf("%d | %d", n, n*(n-1)/2) }

var s3Ref = func(name string) catalog.TableRef { return catalog.TableRef{Catalog: "s3", Schema: "db", Table: name} }

// TestObjectStoreReadWriteDelete: DDL, INSERT, UPDATE, DELETE and queries
// on a table whose files live on S3, checked against the values written;
// the data and metadata really are objects of the bucket.
func TestObjectStoreReadWriteDelete(t *testing.T) {
	srv := startS3(t)
	s := startS3Cluster(t, srv, t.TempDir(), s3Cluster{})
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE SCHEMA s3.db")
	execUpdate(t, cnxn, "CREATE TABLE s3.db.t (id BIGINT, g BIGINT, s VARCHAR)")
	for f := 0; f < 4; f++ {
		execUpdate(t, cnxn, "INSERT INTO s3.db.t VALUES "+valuesRows(f*100, (f+1)*100, func(i int) string {
			return fmt.Sprintf("(%d, %d, 'v%d')", i, i%3, i)
		}))
	}
	wantRows(t, cnxn, "SELECT count(*), sum(id), count(DISTINCT g) FROM s3.db.t", "400 | 79800 | 3")
	wantRows(t, cnxn, "SELECT s FROM s3.db.t WHERE id = 123", "v123")
	execUpdate(t, cnxn, "DELETE FROM s3.db.t WHERE g = 0")
	wantRows(t, cnxn, "SELECT count(*), min(g) FROM s3.db.t", "266 | 1")
	execUpdate(t, cnxn, "UPDATE s3.db.t SET s = 'updated' WHERE id < 10")
	wantRows(t, cnxn, "SELECT count(*) FROM s3.db.t WHERE s = 'updated'", "6")
	wantRows(t, cnxn, "SELECT count(*) FROM s3.db.t", "266")
	files := liveFiles(t, s, s3Ref("t"))
	if len(files) == 0 {
		t.Fatal("no data files")
	}
	for _, f := range files {
		if !strings.HasPrefix(f, "s3://"+s3Bucket+"/wh/") {
			t.Fatalf("data file %s is not on the server", f)
		}
		if len(srv.get(t, f)) == 0 {
			t.Fatalf("object %s is empty", f)
		}
	}
	execUpdate(t, cnxn, "DROP TABLE s3.db.t")
	if _, err := query(t, cnxn, "SELECT count(*) FROM s3.db.t"); err == nil {
		t.Fatal("dropped table still answers")
	}
}

// TestObjectStoreCacheHits: the first query fetches each data file once,
// on the worker its file hashes to; the same query again and another
// query of the same table are served from the copies (no byte fetched),
// and DuckDB read the copies directly.
func TestObjectStoreCacheHits(t *testing.T) {
	srv := startS3(t)
	reg := prometheus.NewRegistry()
	s := startS3Cluster(t, srv, t.TempDir(), s3Cluster{workers: 2, metrics: reg})
	cnxn := adbcConn(t, s.Addr())
	const files, rows = 8, 200
	fillTable(t, cnxn, "c", files, rows)
	before := dataStats(t, s.Workers)
	direct := s.Workers[0].DirectScans() + s.Workers[1].DirectScans()
	wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.c", sumOf(files*rows))
	warm := dataStats(t, s.Workers)
	if got := warm.Misses - before.Misses; got != files {
		t.Fatalf("first query: %d files fetched, want each of %d once: %+v", got, files, warm)
	}
	if warm.Entries != files {
		t.Fatalf("%d copies cached, want %d", warm.Entries, files)
	}
	for i := 0; i < 2; i++ {
		wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.c", sumOf(files*rows))
		wantRows(t, cnxn, "SELECT g, count(*) FROM s3.db.c WHERE id >= 800 GROUP BY g", groupCounts(800, files*rows)...)
	}
	after := dataStats(t, s.Workers)
	if after.Misses != warm.Misses || after.FetchedBytes != warm.FetchedBytes {
		t.Fatalf("warm queries fetched again: %+v, was %+v", after, warm)
	}
	if after.Hits-warm.Hits < 2*files {
		t.Fatalf("warm queries: %d hits, want at least %d", after.Hits-warm.Hits, 2*files)
	}
	if d := s.Workers[0].DirectScans() + s.Workers[1].DirectScans() - direct; d == 0 {
		t.Fatal("no scan read the copies with DuckDB")
	}
	// The Prometheus counters are the caches' own.
	fams := gathered(t, reg)
	for name, want := range map[string]uint64{
		"icefloe_data_cache_hits_total": after.Hits, "icefloe_data_cache_misses_total": after.Misses,
		"icefloe_data_cache_fetched_bytes_total": after.FetchedBytes, "icefloe_data_cache_entries": uint64(after.Entries),
	} {
		if v := sample(fams, name); v != float64(want) {
			t.Errorf("%s = %v, the caches count %d", name, v, want)
		}
	}
}

// TestObjectStoreEviction: with a cache bound of a few files, queries
// over more than that stay right, copies are evicted and the bound holds.
// TestObjectStoreEncryptedNotCached: an encrypted table on S3 reads
// back through its key, and the workers' data caches keep none of its
// files (their copies would be the files decrypted, on local disk).
func TestObjectStoreEncryptedNotCached(t *testing.T) {
	srv := startS3(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	s := startS3Cluster(t, srv, t.TempDir(), s3Cluster{workers: 2, props: map[string]string{
		"kms-type": tablecrypt.StaticKMS, tablecrypt.StaticKeyPrefix + "k1": key,
	}})
	cnxn := adbcConn(t, s.Addr())
	const files, rows = 4, 50
	execUpdate(t, cnxn, "CREATE SCHEMA IF NOT EXISTS s3.db")
	execUpdate(t, cnxn, "CREATE TABLE s3.db.e (id BIGINT, g BIGINT, s VARCHAR) WITH ('encryption.key-id' = 'k1')")
	for f := 0; f < files; f++ {
		execUpdate(t, cnxn, "INSERT INTO s3.db.e VALUES "+valuesRows(f*rows, (f+1)*rows, func(i int) string {
			return fmt.Sprintf("(%d, %d, 'x%d')", i, i%7, i)
		}))
	}
	before := dataStats(t, s.Workers)
	for i := 0; i < 2; i++ {
		wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.e", sumOf(files*rows))
		wantRows(t, cnxn, "SELECT g, count(*) FROM s3.db.e WHERE id >= 100 GROUP BY g", groupCounts(100, files*rows)...)
	}
	after := dataStats(t, s.Workers)
	if after.Misses != before.Misses || after.Hits != before.Hits || after.Entries != 0 {
		t.Fatalf("an encrypted table's files went through the data cache: %+v, was %+v", after, before)
	}
	for _, f := range liveFiles(t, s, catalog.TableRef{Catalog: "s3", Schema: "db", Table: "e"}) {
		if data := srv.get(t, f); bytes.HasPrefix(data, []byte("PAR1")) {
			t.Fatalf("%s is plain Parquet on S3", f)
		}
	}
}

func TestObjectStoreEviction(t *testing.T) {
	srv := startS3(t)
	dir := t.TempDir()
	s := startS3Cluster(t, srv, dir, s3Cluster{workers: 1, cacheBytes: 5000})
	cnxn := adbcConn(t, s.Addr())
	const files, rows = 8, 200
	fillTable(t, cnxn, "e", files, rows)
	for i := 0; i < 3; i++ {
		wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.e", sumOf(files*rows))
		wantRows(t, cnxn, "SELECT g, count(*) FROM s3.db.e GROUP BY g", groupCounts(0, files*rows)...)
		st := dataStats(t, s.Workers)
		if st.Bytes > st.MaxBytes {
			t.Fatalf("cache holds %d bytes, bound %d", st.Bytes, st.MaxBytes)
		}
	}
	st := dataStats(t, s.Workers)
	if st.Evictions == 0 || st.Misses <= files {
		t.Fatalf("no eviction under a bound of ~2 files: %+v", st)
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "cache", "worker-0", "*.data"))
	var onDisk int64
	for _, c := range copies {
		if fi, err := os.Stat(c); err == nil {
			onDisk += fi.Size()
		}
	}
	if onDisk > st.MaxBytes || len(copies) != st.Entries {
		t.Fatalf("%d copies of %d bytes on disk, stats %+v", len(copies), onDisk, st)
	}
}

// TestObjectStoreChangedUnderneath: after the cache is warm, a data file
// deleted on S3 fails the query naming it, and so does a file rewritten
// with other bytes; no query answers from the stale copies. Both read
// paths: DuckDB over the copies, and iceberg-go through the cache.
func TestObjectStoreChangedUnderneath(t *testing.T) {
	srv := startS3(t)
	for _, c := range []struct {
		name     string
		noDirect bool
	}{{"direct", false}, {"iceberg-go", true}} {
		t.Run(c.name, func(t *testing.T) {
			s := startS3Cluster(t, srv, t.TempDir(), s3Cluster{workers: 2, noDirect: c.noDirect})
			cnxn := adbcConn(t, s.Addr())
			name := "u_" + strings.ReplaceAll(c.name, "-", "")
			const files, rows = 6, 100
			fillTable(t, cnxn, name, files, rows)
			q := "SELECT count(*), sum(id) FROM s3.db." + name
			wantRows(t, cnxn, q, sumOf(files*rows))
			wantRows(t, cnxn, q, sumOf(files*rows))
			if st := dataStats(t, s.Workers); st.Hits < files {
				t.Fatalf("cache not warm: %+v", st)
			}
			locs := liveFiles(t, s, s3Ref(name))
			gone, changed := locs[1], locs[4]
			keep := srv.get(t, gone)
			srv.remove(t, gone)
			_, err := query(t, cnxn, q)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(gone)) {
				t.Fatalf("query over a deleted file: %v; want an error naming %s", err, gone)
			}
			srv.put(t, gone, keep)
			wantRows(t, cnxn, q, sumOf(files*rows))

			srv.put(t, changed, append(srv.get(t, changed), []byte("trailing bytes")...))
			_, err = query(t, cnxn, q)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(changed)) || !strings.Contains(err.Error(), "changed") {
				t.Fatalf("query over a rewritten file: %v; want an error naming %s", err, changed)
			}
		})
	}
}

// TestObjectStoreCacheRestart: workers restarted on the same cache
// directories serve the copies they fetched before, without fetching.
func TestObjectStoreCacheRestart(t *testing.T) {
	srv := startS3(t)
	dir, cacheDir := t.TempDir(), t.TempDir()
	const files, rows = 6, 100
	s := startS3Cluster(t, srv, dir, s3Cluster{workers: 2, cacheDir: cacheDir})
	cnxn := adbcConn(t, s.Addr())
	fillTable(t, cnxn, "r", files, rows)
	wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.r", sumOf(files*rows))
	if st := dataStats(t, s.Workers); st.Misses != files {
		t.Fatalf("first run: %+v", st)
	}
	cnxn.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A fetch interrupted by the stop would have left a temporary file.
	os.WriteFile(filepath.Join(cacheDir, "worker-0", "tmp-interrupted"), []byte("partial"), 0o600)

	s = startS3Cluster(t, srv, dir, s3Cluster{workers: 2, cacheDir: cacheDir})
	if st := dataStats(t, s.Workers); st.Entries != files {
		t.Fatalf("restarted caches index %d copies, want %d", st.Entries, files)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "worker-0", "tmp-interrupted")); !os.IsNotExist(err) {
		t.Fatal("the temporary file of an interrupted fetch was kept")
	}
	cnxn = adbcConn(t, s.Addr())
	wantRows(t, cnxn, "SELECT count(*), sum(id) FROM s3.db.r", sumOf(files*rows))
	if st := dataStats(t, s.Workers); st.Misses != 0 || st.Hits != files {
		t.Fatalf("after restart: %+v, want %d hits and no fetch", st, files)
	}
}

// TestObjectStoreAffinityJoinLeave: separate workers behind a
// health-checked pool (the membership icefloe has: a listed set of
// addresses, each checked). Each file is fetched by one worker and stays
// there across queries; when a worker leaves, only its files are fetched
// again, by the others; when one joins, it takes a share of about 1/N and
// the others fetch nothing.
func TestObjectStoreAffinityJoinLeave(t *testing.T) {
	srv := startS3(t)
	ctx := context.Background()
	dir := t.TempDir()
	mounts := catalog.NewMounts()
	cat, props, err := catalog.Open(ctx, srv.catalog(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := mounts.Mount("s3", cat, props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mounts.Close() })
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	// Four listed addresses; the fourth worker joins later.
	var addrs []string
	for i := 0; i < 4; i++ {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", testproc.FreePort(t)))
	}
	readDir := t.TempDir()
	workers := make([]*cluster.Worker, 4)
	start := func(i int) {
		w, err := cluster.StartWorker(ctx, cluster.WorkerOptions{
			Listen: addrs[i], Key: key,
			Engine:    engine.Options{Threads: 1, MemoryLimit: "512MB", TempDir: t.TempDir(), ReadDirs: []string{readDir}},
			DataCache: datacache.Options{Dir: filepath.Join(dir, fmt.Sprintf("cache-%d", i))},
		})
		if err != nil {
			t.Fatal(err)
		}
		workers[i] = w
		t.Cleanup(func() { w.Close() })
	}
	for i := 0; i < 3; i++ {
		start(i)
	}
	var locs []string
	for _, a := range addrs {
		locs = append(locs, "grpc://"+a)
	}
	pool, err := fleet.NewWorkerPool(key, locs, fleet.WithHealthInterval(100*time.Millisecond), fleet.WithHealthTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	coord, err := cluster.StartCoordinator(ctx, cluster.CoordinatorOptions{
		Listen: "127.0.0.1:0", Key: key, Mounts: mounts, Workers: pool,
		DefaultCatalog: "s3", DefaultSchema: "db", DataCache: true,
		Engine:           engine.Options{TempDir: t.TempDir()},
		ResultCacheBytes: resultCacheBytes(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close() })
	waitLive := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for len(pool.Live()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d workers live, want %d", len(pool.Live()), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitLive(3)
	cnxn := adbcConn(t, coord.Addr)
	const files, rows = 40, 20
	fillTable(t, cnxn, "a", files, rows)
	q := "SELECT count(*), sum(id) FROM s3.db.a"
	misses := func(ws ...int) []uint64 {
		out := make([]uint64, 4)
		for _, i := range ws {
			st, _ := workers[i].DataCacheStats()
			out[i] = st.Misses
		}
		return out
	}
	delta := func(a, b []uint64) []uint64 {
		out := make([]uint64, len(a))
		for i := range a {
			out[i] = b[i] - a[i]
		}
		return out
	}
	sum := func(v []uint64) (n uint64) {
		for _, x := range v {
			n += x
		}
		return n
	}

	m0 := misses(0, 1, 2)
	wantRows(t, cnxn, q, sumOf(files*rows))
	m1 := misses(0, 1, 2)
	if d := delta(m0, m1); sum(d) != files {
		t.Fatalf("first query fetched %v, want each of %d files once", d, files)
	}
	wantRows(t, cnxn, q, sumOf(files*rows))
	if d := delta(m1, misses(0, 1, 2)); sum(d) != 0 {
		t.Fatalf("the same query again fetched %v", d)
	}

	// Worker 2 leaves: its files, and only those, go to the others.
	st2, _ := workers[2].DataCacheStats()
	owned := uint64(st2.Entries)
	workers[2].Close()
	waitLive(2)
	m2 := misses(0, 1)
	wantRows(t, cnxn, q, sumOf(files*rows))
	m3 := misses(0, 1)
	if d := delta(m2, m3); sum(d) != owned {
		t.Fatalf("after worker 2 left: fetched %v, want its %d files", d, owned)
	}

	// Worker 3 joins: it takes about a third of the files; the others
	// fetch nothing.
	start(3)
	waitLive(3)
	wantRows(t, cnxn, q, sumOf(files*rows))
	d := delta(m3, misses(0, 1, 3))
	t.Logf("worker 2 had %d files; worker 3 took %d of %d", owned, d[3], files)
	if d[0] != 0 || d[1] != 0 {
		t.Fatalf("after worker 3 joined, the others fetched %v", d)
	}
	if d[3] < 4 || d[3] > 24 {
		t.Fatalf("worker 3 took %d of %d files, want about 1/3", d[3], files)
	}
	wantRows(t, cnxn, q, sumOf(files*rows))
	if d2 := delta(m3, misses(0, 1, 3)); sum(d2) != sum(d) {
		t.Fatalf("membership stable, but the query fetched again: %v then %v", d, d2)
	}
}
