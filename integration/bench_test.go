package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// Planner benchmarks (docs/benchmarks.md, "Planner"). They build their
// tables themselves and are never part of `make test`: run them with
//
//	go test -tags duckdb_arrow -run '^$' -bench 'Planning|TicketBytes|GroupBy' -benchtime 20x ./integration/
//
// Figures are reported with b.ReportMetric, never asserted.

// benchEnv is a 2-worker cluster with nothing in its catalog, and its
// ticket key, so extra coordinators seal tickets its workers open.
type benchEnv struct {
	s       *cluster.Standalone
	key     *wire.Key
	cat     icecat.Catalog
	dataDir string
}

func benchCluster(b *testing.B) *benchEnv {
	b.Helper()
	ctx := context.Background()
	key, err := wire.RandomKey()
	if err != nil {
		b.Fatal(err)
	}
	dataDir := b.TempDir()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen: "127.0.0.1:0", WorkerHost: "127.0.0.1", Workers: 2, DataDir: dataDir, Key: key,
		WorkerEngine: engine.Options{Threads: 2, MemoryLimit: "2GB"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	mt, err := s.Mounts.Get(catalog.LocalCatalogName)
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := mt.Catalog.CheckNamespaceExists(ctx, table.Identifier{catalog.DefaultSchema}); err != nil {
		b.Fatal(err)
	} else if !ok {
		if err := mt.Catalog.CreateNamespace(ctx, table.Identifier{catalog.DefaultSchema}, nil); err != nil {
			b.Fatal(err)
		}
	}
	return &benchEnv{s: s, key: key, cat: mt.Catalog, dataDir: dataDir}
}

var benchSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "k", Type: iceberg.PrimitiveTypes.Int64, Required: false},
	iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64, Required: false},
)

// createBenchTable creates an unpartitioned v2 table.
func createBenchTable(b *testing.B, cat icecat.Catalog, name string, props iceberg.Properties) *table.Table {
	b.Helper()
	p := iceberg.Properties{table.PropertyFormatVersion: "2"}
	for k, v := range props {
		p[k] = v
	}
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{catalog.DefaultSchema, name}, benchSchema, icecat.WithProperties(p))
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

// benchRows makes n rows: id from first, k = id % groups, v random.
func benchRows(b *testing.B, sc *arrow.Schema, first, n int64, groups int64, rng *rand.Rand) arrow.RecordBatch {
	b.Helper()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	ids := bld.Field(0).(*array.Int64Builder)
	ks := bld.Field(1).(*array.Int64Builder)
	vs := bld.Field(2).(*array.Float64Builder)
	ids.Reserve(int(n))
	ks.Reserve(int(n))
	vs.Reserve(int(n))
	for i := first; i < first+n; i++ {
		ids.UnsafeAppend(i)
		ks.UnsafeAppend(i % groups)
		vs.UnsafeAppend(rng.Float64() * 1000)
	}
	return bld.NewRecordBatch()
}

// templateFile appends one small batch to a staging table and returns its
// data file, whose Parquet file the caller copies: copies are real files
// with real statistics, so plans over them can also run.
func templateFile(b *testing.B, cat icecat.Catalog, name string) (iceberg.DataFile, []byte) {
	b.Helper()
	ctx := context.Background()
	tbl := createBenchTable(b, cat, name, nil)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	rec := benchRows(b, sc, 0, 10, 4, rand.New(rand.NewPCG(1, 2)))
	rdr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	rec.Release()
	tbl, err = tbl.Append(ctx, rdr, nil)
	rdr.Release()
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		b.Fatalf("template: %d tasks, %v", len(tasks), err)
	}
	df := tasks[0].File
	data, err := os.ReadFile(strings.TrimPrefix(df.FilePath(), "file://"))
	if err != nil {
		b.Fatal(err)
	}
	return df, data
}

// copyFile writes a copy of the template's Parquet bytes under dir and
// returns a DataFile for it with the template's statistics.
func copyFile(b *testing.B, tmpl iceberg.DataFile, data []byte, dir string, i int) iceberg.DataFile {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("f-%06d.parquet", i))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file://"+path, iceberg.ParquetFile,
		nil, nil, nil, tmpl.Count(), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	return bld.ValueCounts(tmpl.ValueCounts()).NullValueCounts(tmpl.NullValueCounts()).
		LowerBoundValues(tmpl.LowerBoundValues()).UpperBoundValues(tmpl.UpperBoundValues()).
		ColumnSizes(tmpl.ColumnSizes()).Build()
}

// BenchmarkPlanning plans queries over a table of 10,000 data files added
// in 1,000 snapshots (10 files each): cold is the first plan of a freshly
// started coordinator, warm every later one.
func BenchmarkPlanning(b *testing.B) {
	const files, snapshots = 10_000, 1_000
	env := benchCluster(b)
	s, cat := env.s, env.cat
	ctx := context.Background()
	tmpl, data := templateFile(b, cat, "template")
	dir := b.TempDir()
	tbl := createBenchTable(b, cat, "many", nil)
	start := time.Now()
	perSnap := files / snapshots
	for sn := 0; sn < snapshots; sn++ {
		dfs := make([]iceberg.DataFile, perSnap)
		for j := range dfs {
			dfs[j] = copyFile(b, tmpl, data, dir, sn*perSnap+j)
		}
		tx := tbl.NewTransaction()
		if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
			b.Fatal(err)
		}
		var err error
		if tbl, err = tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("built %d files in %d snapshots in %s (metadata %s)", files, len(tbl.Metadata().Snapshots()), time.Since(start).Round(time.Millisecond), tbl.MetadataLocation())

	queries := map[string]string{
		"scan":      "SELECT id, v FROM many WHERE k = 1",
		"aggregate": "SELECT k, count(*), sum(v) FROM many GROUP BY k",
	}
	for _, name := range []string{"scan", "aggregate"} {
		q := queries[name]
		b.Run(name+"/cold", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// A fresh coordinator has an empty metadata cache.
				s.Mounts.SetCache(catalog.NewMetadataCache(0))
				c, err := cluster.StartCoordinator(ctx, cluster.CoordinatorOptions{
					Listen: "127.0.0.1:0", Key: env.key, Mounts: s.Mounts,
					Workers:        fleet.NewStaticWorkers(s.Workers[0].Location(), s.Workers[1].Location()),
					DefaultCatalog: catalog.LocalCatalogName, DefaultSchema: catalog.DefaultSchema,
					Engine: engine.Options{TempDir: b.TempDir()},
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				plan, err := c.Planner.Plan(ctx, diffSession, parse.Must(q))
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				reportPlan(b, plan.Endpoints)
				c.Close()
				b.StartTimer()
			}
		})
		b.Run(name+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			if _, err := s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(q)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				plan, err := s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(q))
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					reportPlan(b, plan.Endpoints)
				}
			}
		})
	}
	// The plans must also run: one real query over all 10,000 files.
	cnxn := adbcConn(b, s.Addr())
	t0 := time.Now()
	res := mustQuery(b, cnxn, "SELECT count(*) FROM many")
	b.Logf("SELECT count(*) over %d files: %v in %s", files, res.rows, time.Since(t0).Round(time.Millisecond))
}

func reportPlan(b *testing.B, eps []planner.Endpoint) {
	total := 0
	for _, ep := range eps {
		total += len(ep.Ticket)
	}
	b.ReportMetric(float64(len(eps)), "endpoints")
	b.ReportMetric(float64(total)/float64(len(eps)), "ticketB/endpoint")
}

// BenchmarkTicketBytes measures the ticket bytes per endpoint of the same
// queries as a table's snapshot count grows from 10 to 10,000 (one live
// data file throughout: each snapshot replaces it). Tickets never carry
// table metadata, so the figures must stay flat.
func BenchmarkTicketBytes(b *testing.B) {
	env := benchCluster(b)
	ctx := context.Background()
	tmpl, data := templateFile(b, env.cat, "template")
	dir := b.TempDir()
	tbl := createBenchTable(b, env.cat, "snaps", nil)
	n := 0
	live := copyFile(b, tmpl, data, dir, n)
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, []iceberg.DataFile{live}, nil); err != nil {
		b.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	snapshots := 1
	for _, target := range []int{10, 100, 1000, 10_000} {
		start := time.Now()
		name := "snaps"
		if target > 1000 {
			// Real commits past ~1,000 snapshots cost minutes and
			// gigabytes in iceberg-go (every operation of a transaction
			// rebuilds the metadata); the rest are synthetic entries in a
			// copy of the metadata file, registered as another table.
			name = fmt.Sprintf("snaps%d", target)
			inflateSnapshots(b, env.cat, env.dataDir, tbl, name, target)
		} else {
			for snapshots < target {
				// Several snapshots per commit: one metadata file write
				// per commit, not per snapshot.
				tx := tbl.NewTransaction()
				for k := 0; k < 250 && snapshots < target; k++ {
					n++
					next := copyFile(b, tmpl, data, dir, n)
					if err := tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{live}, []iceberg.DataFile{next}, nil); err != nil {
						b.Fatal(err)
					}
					live = next
					snapshots++
				}
				if tbl, err = tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		cur, err := env.cat.LoadTable(ctx, table.Identifier{catalog.DefaultSchema, name})
		if err != nil {
			b.Fatal(err)
		}
		if got := len(cur.Metadata().Snapshots()); got != target {
			b.Fatalf("table has %d snapshots, want %d", got, target)
		}
		meta, err := os.Stat(strings.TrimPrefix(cur.MetadataLocation(), "file://"))
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%d snapshots (built in %s), metadata file %d bytes", target, time.Since(start).Round(time.Millisecond), meta.Size())
		for _, q := range []struct{ name, sql string }{
			{"scan", "SELECT id, v FROM " + name + " WHERE k = 1"},
			{"aggregate", "SELECT k, count(*), sum(v) FROM " + name + " GROUP BY k"},
		} {
			b.Run(fmt.Sprintf("snapshots=%d/%s", target, q.name), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					plan, err := env.s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(q.sql))
					if err != nil {
						b.Fatal(err)
					}
					if i == 0 {
						reportPlan(b, plan.Endpoints)
						b.ReportMetric(float64(meta.Size()), "metadataB")
					}
				}
			})
		}
	}
}

// inflateSnapshots copies tbl's metadata file with synthetic snapshots
// prepended (copies of its first snapshot, sharing its manifest list, with
// their own ids and earlier timestamps) up to target snapshots, and
// registers the copy as table name. The current snapshot stays tbl's.
func inflateSnapshots(b *testing.B, cat icecat.Catalog, dataDir string, tbl *table.Table, name string, target int) {
	b.Helper()
	path := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		b.Fatal(err)
	}
	snaps := m["snapshots"].([]any)
	extra := target - len(snaps)
	first := snaps[0].(map[string]any)
	t0, err := first["timestamp-ms"].(json.Number).Int64()
	if err != nil {
		b.Fatal(err)
	}
	fakes := make([]any, 0, extra)
	log := make([]any, 0, extra)
	for i := 0; i < extra; i++ {
		f := map[string]any{}
		for k, v := range first {
			f[k] = v
		}
		id := json.Number(strconv.FormatInt(int64(1_000_000_000+i), 10))
		ts := json.Number(strconv.FormatInt(t0-int64(extra-i), 10))
		f["snapshot-id"], f["timestamp-ms"] = id, ts
		delete(f, "parent-snapshot-id")
		if i > 0 {
			f["parent-snapshot-id"] = fakes[i-1].(map[string]any)["snapshot-id"]
		}
		fakes = append(fakes, f)
		log = append(log, map[string]any{"snapshot-id": id, "timestamp-ms": ts})
	}
	if extra > 0 {
		first["parent-snapshot-id"] = fakes[extra-1].(map[string]any)["snapshot-id"]
	}
	m["snapshots"] = append(fakes, snaps...)
	if sl, ok := m["snapshot-log"].([]any); ok {
		m["snapshot-log"] = append(log, sl...)
	}
	out, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(filepath.Dir(path), fmt.Sprintf("99999-%s.metadata.json", name))
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		b.Fatal(err)
	}
	// The SQL catalog has no RegisterTable: create the table, then point
	// its catalog row at the new metadata file.
	createBenchTable(b, cat, name, nil)
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(dataDir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec("UPDATE iceberg_tables SET metadata_location = ? WHERE table_namespace = ? AND table_name = ?", "file://"+dst, catalog.DefaultSchema, name)
	if err != nil {
		b.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		b.Fatalf("registering %s: %d catalog rows updated", name, n)
	}
}

// BenchmarkGroupBy10M runs one GROUP BY over 10M rows in 10 Parquet files
// three ways in each iteration — through the cluster as planned (two-phase
// where the planner does it), through the cluster as a gather, and with
// DuckDB reading the same Parquet files directly — and reports each time
// and the ratios to DuckDB.
func BenchmarkGroupBy10M(b *testing.B) {
	const rows, files, groups = 10_000_000, 10, 1000
	env := benchCluster(b)
	ctx := context.Background()
	tbl := createBenchTable(b, env.cat, "big", nil)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Now()
	for f := int64(0); f < files; f++ {
		rec := benchRows(b, sc, f*rows/files, rows/files, groups, rng)
		rdr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		tbl, err = tbl.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	var bytes int64
	for _, t := range tasks {
		paths = append(paths, engine.QuoteString(strings.TrimPrefix(t.File.FilePath(), "file://")))
		bytes += t.File.FileSizeBytes()
	}
	b.Logf("wrote %d rows in %d files (%d bytes) in %s", rows, len(tasks), bytes, time.Since(start).Round(time.Millisecond))

	twoPhase := "SELECT k, count(*) AS n, sum(v) AS s FROM big GROUP BY k"
	// The same aggregate behind a shape the planner gathers.
	var gather string
	for _, q := range []string{
		"WITH g AS MATERIALIZED (SELECT k, v FROM big) SELECT k, count(*) AS n, sum(v) AS s FROM g GROUP BY k",
		"SELECT k, count(*) AS n, sum(v) AS s FROM (SELECT k, v, row_number() OVER () AS r FROM big) GROUP BY k",
	} {
		plan, err := env.s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(q))
		if err == nil && plan.Strategy == planner.Gather {
			gather = q
			break
		}
	}
	if gather == "" {
		b.Fatal("no gathered form of the aggregate")
	}
	plan, err := env.s.Coordinator.Planner.Plan(ctx, diffSession, parse.Must(twoPhase))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%q is planned %s with %d endpoints; gather form: %q", twoPhase, plan.Strategy, len(plan.Endpoints), gather)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	direct := fmt.Sprintf("SELECT k, count(*) AS n, sum(v) AS s FROM read_parquet([%s]) GROUP BY k", strings.Join(paths, ", "))
	cnxn := adbcConn(b, env.s.Addr())
	timeIt := func(run func() int) (time.Duration, int) {
		t0 := time.Now()
		n := run()
		return time.Since(t0), n
	}
	var tp, ga, dd time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d1, n1 := timeIt(func() int { return len(mustQuery(b, cnxn, twoPhase).rows) })
		d2, n2 := timeIt(func() int { return len(mustQuery(b, cnxn, gather).rows) })
		d3, n3 := timeIt(func() int {
			r, err := db.QueryContext(ctx, direct)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			n := 0
			for r.Next() {
				n++
			}
			return n
		})
		if n1 != groups || n2 != groups || n3 != groups {
			b.Fatalf("groups: cluster %d, gather %d, duckdb %d; want %d", n1, n2, n3, groups)
		}
		tp, ga, dd = tp+d1, ga+d2, dd+d3
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tp.Milliseconds())/n, "ms-cluster")
	b.ReportMetric(float64(ga.Milliseconds())/n, "ms-gather")
	b.ReportMetric(float64(dd.Milliseconds())/n, "ms-duckdb")
	b.ReportMetric(float64(tp)/float64(dd), "cluster/duckdb")
	b.ReportMetric(float64(ga)/float64(dd), "gather/duckdb")
}
