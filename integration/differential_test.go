package integration

import (
	"bufio"
	"context"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/fleet"
	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/wire"
)

// The differential harness (after promql-engine's TestQueriesAgainstOldEngine):
// every query of integration/corpus runs through the cluster with 1, 2 and
// 4 workers, each with the planner's default groups and with groups of one
// file, and is compared with single-node DuckDB over the same snapshot of
// the same tables. Every mismatch of a run is reported, with the query, the
// configuration and a diff.

// floatTolerance is the relative tolerance for floating-point cells.
const floatTolerance = 1e-9

// corpusCase is one query of the corpus.
type corpusCase struct {
	name    string // unique in the corpus: file:line, or the given name
	pos     string // file:line
	sql     string
	ordered bool // ORDER BY fixes the order of every row
}

// loadCorpus reads every *.txt file of dir. A case is
//
//	query ordered|rows [name]
//	SQL, one or more lines
//	(a blank line)
//
// Lines starting with # outside a query are comments. "ordered" compares
// rows in order (only where ORDER BY fixes every row's place); "rows"
// compares them as a multiset.
func loadCorpus(t testing.TB, dir string) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in %s: %v", dir, err)
	}
	var cases []corpusCase
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(f), ".txt")
		var cur *corpusCase
		var sql []string
		flush := func() {
			if cur != nil {
				cur.sql = strings.TrimSpace(strings.Join(sql, "\n"))
				if cur.sql == "" {
					t.Fatalf("%s: query without SQL", cur.pos)
				}
				if prev, dup := seen[cur.name]; dup {
					t.Fatalf("%s: case name %q used already at %s", cur.pos, cur.name, prev)
				}
				seen[cur.name] = cur.pos
				cases = append(cases, *cur)
			}
			cur, sql = nil, nil
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			trimmed := strings.TrimSpace(text)
			switch {
			case cur != nil && trimmed == "":
				flush()
			case cur != nil:
				sql = append(sql, text)
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			case strings.HasPrefix(trimmed, "query "):
				fields := strings.Fields(trimmed)
				if len(fields) < 2 || len(fields) > 3 || (fields[1] != "ordered" && fields[1] != "rows") {
					t.Fatalf("%s:%d: want `query ordered|rows [name]`, got %q", f, line, text)
				}
				pos := fmt.Sprintf("%s:%d", filepath.Base(f), line)
				name := fmt.Sprintf("%s_%d", base, line)
				if len(fields) == 3 {
					name = base + "_" + fields[2]
				}
				cur = &corpusCase{name: name, pos: pos, ordered: fields[1] == "ordered"}
			default:
				t.Fatalf("%s:%d: unexpected line %q", f, line, text)
			}
		}
		flush()
	}
	return cases
}

// diffConfig is one cluster configuration the corpus runs under.
type diffConfig struct {
	name    string
	workers int
	oneFile bool
	coord   *cluster.Coordinator
	cnxn    adbc.Connection
}

// diffEnv is one set of generated tables, the workers, one coordinator per
// configuration over subsets of them, and the single-node reference.
type diffEnv struct {
	s       *cluster.Standalone
	dataDir string // the cluster's data dir: catalog.db and the warehouse
	configs []*diffConfig
	ref     *engine.Conn
	// spilling are the workers of spillShuffleConfig.
	spilling []*cluster.Worker
}

// startDiffEnv starts max(workers) workers over a fresh catalog with the
// differential tables, and one coordinator per (worker count, grouping):
// a coordinator planning over the first n workers is an n-worker cluster.
func startDiffEnv(t testing.TB, workers []int, groupings []bool) *diffEnv {
	t.Helper()
	env := startDiffCluster(t, workers, groupings)
	createDiffTables(t, env.s.Mounts)
	env.ref = referenceConn(t, env.s.Mounts, diffTableNames())
	return env
}

// startDiffCluster starts the workers and the coordinators of every
// configuration over a fresh, empty catalog; env.ref is left to the
// caller.
func startDiffCluster(t testing.TB, workers []int, groupings []bool) *diffEnv {
	t.Helper()
	ctx := context.Background()
	key, err := wire.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	s, err := cluster.StartStandalone(ctx, cluster.StandaloneOptions{
		Listen:       "127.0.0.1:0",
		WorkerHost:   "127.0.0.1",
		Workers:      slices.Max(workers),
		DataDir:      dataDir,
		Key:          key,
		WorkerEngine: engine.Options{Threads: 1, MemoryLimit: "1GB"},
	})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	env := &diffEnv{s: s, dataDir: dataDir}
	// startCoord starts a coordinator over the workers at locs.
	startCoord := func(name string, locs []string, target int64, direct []string, tune ...func(*cluster.CoordinatorOptions)) *cluster.Coordinator {
		o := cluster.CoordinatorOptions{
			Listen:           "127.0.0.1:0",
			Key:              key,
			Mounts:           s.Mounts,
			Workers:          fleet.NewStaticWorkers(locs...),
			DefaultCatalog:   catalog.LocalCatalogName,
			DefaultSchema:    catalog.DefaultSchema,
			Engine:           engine.Options{Threads: 1, TempDir: t.TempDir()},
			TargetGroupBytes: target,
			DirectDirs:       direct,
		}
		for _, f := range tune {
			f(&o)
		}
		c, err := cluster.StartCoordinator(ctx, o)
		if err != nil {
			t.Fatalf("start coordinator %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("stop coordinator %s: %v", name, err)
			}
		})
		return c
	}
	for _, n := range workers {
		for _, one := range groupings {
			var locs []string
			for _, w := range s.Workers[:n] {
				locs = append(locs, w.Location())
			}
			// The default configurations gather onto a worker that reads
			// the local files itself (planner DirectDirs); the one-file
			// ones pull scan fragments from the workers.
			target := int64(0)
			name := fmt.Sprintf("w%d", n)
			direct := []string{filepath.Join(dataDir, "warehouse")}
			if one {
				target, name, direct = 1, name+"-onefile", nil
			}
			c := startCoord(name, locs, target, direct)
			env.configs = append(env.configs, &diffConfig{name: name, workers: n, oneFile: one, coord: c, cnxn: adbcConn(t, c.Addr)})
		}
	}
	// The workers above read local Parquet with DuckDB (worker/direct.go);
	// one more configuration runs on two workers that read every file with
	// iceberg-go, as workers do for object stores.
	if slices.Contains(workers, 2) {
		var locs []string
		for i := range 2 {
			w, err := cluster.StartWorker(ctx, cluster.WorkerOptions{
				Listen: "127.0.0.1:0",
				Key:    key,
				Engine: engine.Options{Threads: 1, MemoryLimit: "1GB", TempDir: t.TempDir()},
			})
			if err != nil {
				t.Fatalf("start iceberg-go worker %d: %v", i, err)
			}
			t.Cleanup(func() { w.Close() })
			locs = append(locs, w.Location())
		}
		c := startCoord("w2-iceberg-go", locs, 0, nil)
		env.configs = append(env.configs, &diffConfig{name: "w2-iceberg-go", workers: 2, coord: c, cnxn: adbcConn(t, c.Addr)})
		// Two workers that shuffle every join of two tables above
		// diffBroadcastBytes they can, with groups of one file.
		locs = []string{s.Workers[0].Location(), s.Workers[1].Location()}
		c = startCoord(shuffleConfig, locs, 1, nil, func(o *cluster.CoordinatorOptions) {
			o.BroadcastBytes, o.ShuffleBytes = diffBroadcastBytes, -1
		})
		env.configs = append(env.configs, &diffConfig{name: shuffleConfig, workers: 2, oneFile: true, coord: c, cnxn: adbcConn(t, c.Addr)})
		// The same workers through a coordinator for which every table is
		// large and every shuffle worth it: every inner join of three or
		// more tables shuffles stage after stage, every grouped
		// aggregate finalizes in one endpoint per partition.
		c = startCoord(stagesConfig, locs, 1, nil, func(o *cluster.CoordinatorOptions) {
			o.BroadcastBytes, o.ShuffleBytes = 1, -1
		})
		env.configs = append(env.configs, &diffConfig{name: stagesConfig, workers: 2, oneFile: true, coord: c, cnxn: adbcConn(t, c.Addr)})
	}
	// Three workers of their own that shuffle what they can, read the
	// files in place with the planner's default groups, and hold a batch
	// per exchange in memory: every shuffle spills.
	if slices.Contains(workers, 4) {
		warehouse := filepath.Join(dataDir, "warehouse")
		var locs []string
		for i := range 3 {
			w, err := cluster.StartWorker(ctx, cluster.WorkerOptions{
				Listen:         "127.0.0.1:0",
				Key:            key,
				Engine:         engine.Options{Threads: 1, MemoryLimit: "1GB", TempDir: t.TempDir(), ReadDirs: []string{warehouse}},
				ExchangeMemory: 1,
			})
			if err != nil {
				t.Fatalf("start spilling worker %d: %v", i, err)
			}
			t.Cleanup(func() { w.Close() })
			env.spilling = append(env.spilling, w)
			locs = append(locs, w.Location())
		}
		c := startCoord(spillShuffleConfig, locs, 0, []string{warehouse}, func(o *cluster.CoordinatorOptions) {
			o.BroadcastBytes, o.ShuffleBytes = diffBroadcastBytes, -1
		})
		env.configs = append(env.configs, &diffConfig{name: spillShuffleConfig, workers: 3, coord: c, cnxn: adbcConn(t, c.Addr)})
	}
	return env
}

// shuffleConfig names the configuration that shuffles joins; the tables
// above diffBroadcastBytes (all but region, nation and strs) count as large
// there.
const (
	shuffleConfig      = "w2-shuffle"
	spillShuffleConfig = "w3-shuffle-spill"
	stagesConfig       = "w2-stages"
	// minStaged: the corpus queries that join three or more tables on
	// equalities, inner joins only, without subqueries.
	minStaged          = 5
	diffBroadcastBytes = 16 << 10
	minShuffled        = 50
	// minBroadcastTwoPhase: corpus/broadcast.txt and the joins of one
	// large table elsewhere.
	minBroadcastTwoPhase = 5
)

// referenceConn loads the current snapshot of each table (in full,
// through iceberg-go, deletes applied) into one single-node DuckDB under
// its bare name.
func referenceConn(t testing.TB, mounts *catalog.Mounts, tables []string) *engine.Conn {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Options{Threads: 2, MemoryLimit: "1GB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, name := range tables {
		p, err := mounts.LoadTable(ctx, catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema, Table: name})
		if err != nil {
			t.Fatal(err)
		}
		sch, recs, err := p.Table.Scan().ToArrowRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var batches []arrow.RecordBatch
		for rec, err := range recs {
			if err != nil {
				t.Fatalf("reference read %s: %v", name, err)
			}
			rec.Retain()
			batches = append(batches, rec)
		}
		rdr, err := array.NewRecordReader(sch, batches)
		for _, b := range batches {
			b.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.LoadTable(ctx, name, rdr); err != nil {
			t.Fatalf("reference load %s: %v", name, err)
		}
		rdr.Release()
	}
	return conn
}

// cellValue is one result cell: floats keep their value for the
// tolerance comparison, everything else compares as text.
type cellValue struct {
	null    bool
	isFloat bool
	f       float64
	s       string
}

func (c cellValue) String() string {
	switch {
	case c.null:
		return "NULL"
	case c.isFloat:
		return strconv.FormatFloat(c.f, 'g', -1, 64)
	}
	return c.s
}

// typedResult is a query result with comparable cells.
type typedResult struct {
	schema *arrow.Schema
	rows   [][]cellValue
}

func appendRows(res *typedResult, rec arrow.RecordBatch) {
	for r := 0; r < int(rec.NumRows()); r++ {
		row := make([]cellValue, rec.NumCols())
		for c := range row {
			col := rec.Column(c)
			if col.IsNull(r) {
				row[c] = cellValue{null: true}
				continue
			}
			switch a := col.(type) {
			case *array.Float64:
				row[c] = cellValue{isFloat: true, f: a.Value(r)}
			case *array.Float32:
				row[c] = cellValue{isFloat: true, f: float64(a.Value(r))}
			default:
				// ValueStr of a string array aliases the batch's buffer:
				// copy it, the batch is released before the comparison.
				row[c] = cellValue{s: strings.Clone(col.ValueStr(r))}
			}
		}
		res.rows = append(res.rows, row)
	}
}

// readAll drains rdr into a typedResult and releases it.
func readAll(rdr array.RecordReader) (typedResult, error) {
	defer rdr.Release()
	res := typedResult{schema: rdr.Schema()}
	for rdr.Next() {
		appendRows(&res, rdr.RecordBatch())
	}
	return res, rdr.Err()
}

// runCluster runs q through ADBC (every endpoint, in parallel).
func runCluster(cnxn adbc.Connection, q string) (typedResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return typedResult{}, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return typedResult{}, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return typedResult{}, err
	}
	return readAll(rdr)
}

// runReference runs q on the single-node reference.
func runReference(ref *engine.Conn, q string) (typedResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdr, err := ref.Query(ctx, q, engine.QueryOptions{})
	if err != nil {
		return typedResult{}, err
	}
	return readAll(rdr)
}

func floatsEqual(a, b float64) bool {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false // the relative tolerance of an infinity is infinite
	}
	return math.Abs(a-b) <= floatTolerance*math.Max(math.Abs(a), math.Abs(b))
}

func cellsEqual(a, b cellValue) bool {
	switch {
	case a.null || b.null:
		return a.null == b.null
	case a.isFloat && b.isFloat:
		return floatsEqual(a.f, b.f)
	}
	return a.isFloat == b.isFloat && a.s == b.s
}

func rowsEqual(a, b []cellValue) bool {
	return slices.EqualFunc(a, b, cellsEqual)
}

func compareCells(a, b cellValue) int {
	switch {
	case a.null || b.null:
		if a.null == b.null {
			return 0
		}
		if a.null {
			return -1
		}
		return 1
	case a.isFloat && b.isFloat:
		if floatsEqual(a.f, b.f) {
			return 0
		}
		if math.IsNaN(a.f) {
			return 1
		}
		if math.IsNaN(b.f) || a.f < b.f {
			return -1
		}
		return 1
	}
	return strings.Compare(a.s, b.s)
}

func compareRows(a, b []cellValue) int {
	for i := range min(len(a), len(b)) {
		if c := compareCells(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func formatRow(r []cellValue) string {
	parts := make([]string, len(r))
	for i, c := range r {
		parts[i] = c.String()
	}
	return strings.Join(parts, " | ")
}

// diffResults compares got with want and describes the differences; it
// returns "" when they agree: the same column names and types, and the
// same rows (in order when ordered, else as multisets), floats within the
// relative tolerance.
func diffResults(got, want typedResult, ordered bool) string {
	var b strings.Builder
	if got.schema.NumFields() != want.schema.NumFields() {
		return fmt.Sprintf("schema: got %s\nwant %s", got.schema, want.schema)
	}
	for i := range got.schema.Fields() {
		g, w := got.schema.Field(i), want.schema.Field(i)
		if g.Name != w.Name || !arrow.TypeEqual(g.Type, w.Type) {
			fmt.Fprintf(&b, "schema field %d: got %s %s, want %s %s\n", i, g.Name, g.Type, w.Name, w.Type)
		}
	}
	if b.Len() > 0 {
		return b.String()
	}
	gr, wr := got.rows, want.rows
	if ordered {
		for i := 0; i < max(len(gr), len(wr)); i++ {
			if i < len(gr) && i < len(wr) && rowsEqual(gr[i], wr[i]) {
				continue
			}
			fmt.Fprintf(&b, "got %d rows, want %d; first difference at row %d:\n", len(gr), len(wr), i)
			for j := max(0, i-1); j < min(i+3, max(len(gr), len(wr))); j++ {
				g, w := "(none)", "(none)"
				if j < len(gr) {
					g = formatRow(gr[j])
				}
				if j < len(wr) {
					w = formatRow(wr[j])
				}
				fmt.Fprintf(&b, "  row %d: got  %s\n  row %d: want %s\n", j, g, j, w)
			}
			return b.String()
		}
		return ""
	}
	gr = slices.Clone(gr)
	wr = slices.Clone(wr)
	slices.SortFunc(gr, compareRows)
	slices.SortFunc(wr, compareRows)
	var extra, missing []string
	i, j := 0, 0
	for i < len(gr) || j < len(wr) {
		switch {
		case i < len(gr) && j < len(wr) && rowsEqual(gr[i], wr[j]):
			i++
			j++
		case j >= len(wr) || (i < len(gr) && compareRows(gr[i], wr[j]) < 0):
			extra = append(extra, formatRow(gr[i]))
			i++
		default:
			missing = append(missing, formatRow(wr[j]))
			j++
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "got %d rows, want %d; %d unexpected, %d missing (multiset)\n", len(gr), len(wr), len(extra), len(missing))
	for k, r := range extra[:min(len(extra), 8)] {
		fmt.Fprintf(&b, "  + %s\n", r)
		if k == 7 && len(extra) > 8 {
			fmt.Fprintf(&b, "  + … %d more\n", len(extra)-8)
		}
	}
	for k, r := range missing[:min(len(missing), 8)] {
		fmt.Fprintf(&b, "  - %s\n", r)
		if k == 7 && len(missing) > 8 {
			fmt.Fprintf(&b, "  - … %d more\n", len(missing)-8)
		}
	}
	return b.String()
}

// check runs q on one configuration and on the reference (computed once
// per query by the caller) and returns a description of any mismatch.
func (cfg *diffConfig) check(q string, ordered bool, want typedResult, wantErr error) string {
	got, err := runCluster(cfg.cnxn, q)
	return diffOutcomes(got, err, want, wantErr, ordered)
}

// diffOutcomes compares the cluster's answer (or error) with the
// reference's: both failing is agreement.
func diffOutcomes(got typedResult, err error, want typedResult, wantErr error, ordered bool) string {
	switch {
	case wantErr != nil && err != nil:
		return ""
	case wantErr != nil:
		return fmt.Sprintf("reference failed (%v) but the cluster answered %d rows", wantErr, len(got.rows))
	case err != nil:
		return fmt.Sprintf("cluster error: %v", err)
	}
	return diffResults(got, want, ordered)
}

var corpusDir = filepath.Join("corpus")

// session is the coordinators' default session.
var diffSession = planner.Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}

func TestDifferential(t *testing.T) {
	cases := loadCorpus(t, corpusDir)
	if len(cases) < 150 {
		t.Errorf("corpus has %d queries, want at least 150", len(cases))
	}
	start := time.Now()
	env := startDiffEnv(t, []int{1, 2, 4}, []bool{false, true})
	t.Logf("cluster and tables ready in %s", time.Since(start).Round(time.Millisecond))

	type refResult struct {
		res typedResult
		err error
	}
	refs := make([]refResult, len(cases))
	strategies := map[string][]string{}
	var shuffled, spillShuffled, bcast2p, staged []string
	config := func(name string) *diffConfig {
		return env.configs[slices.IndexFunc(env.configs, func(c *diffConfig) bool { return c.name == name })]
	}
	shuffling, spilling, staging := config(shuffleConfig), config(spillShuffleConfig), config(stagesConfig)
	for i, c := range cases {
		res, err := runReference(env.ref, c.sql)
		if err != nil {
			t.Errorf("%s (%s): the reference cannot run this corpus query (harness bug): %v\n%s", c.name, c.pos, err, c.sql)
		}
		refs[i] = refResult{res, err}
		// How the widest configuration plans it, for the summary.
		st := "error"
		if plan, err := env.configs[len(env.configs)-1].coord.Planner.Plan(context.Background(), diffSession, parse.Must(c.sql)); err == nil {
			st = string(plan.Strategy)
		}
		strategies[st] = append(strategies[st], c.name)
		if plan, err := shuffling.coord.Planner.Plan(context.Background(), diffSession, parse.Must(c.sql)); err == nil {
			if plan.Strategy == planner.Shuffle {
				shuffled = append(shuffled, c.name)
			}
			if strings.Contains(plan.Explain, "rule\tbroadcast two-phase: applies") {
				bcast2p = append(bcast2p, c.name)
			}
		}
		if plan, err := spilling.coord.Planner.Plan(context.Background(), diffSession, parse.Must(c.sql)); err == nil && plan.Strategy == planner.Shuffle {
			spillShuffled = append(spillShuffled, c.name)
		}
		if plan, err := staging.coord.Planner.Plan(context.Background(), diffSession, parse.Must(c.sql)); err == nil && strings.Contains(plan.Explain, "rule\tshuffle stages: applies") {
			staged = append(staged, c.name)
		}
	}
	t.Logf("%s shuffles %d corpus queries stage after stage: %s", stagesConfig, len(staged), strings.Join(staged, " "))
	if len(staged) < minStaged {
		t.Errorf("%s shuffles %d corpus queries stage after stage, want at least %d", stagesConfig, len(staged), minStaged)
	}
	// The shuffling configuration must shuffle what it claims to: joins
	// of every kind, with and without small tables, and aggregates and
	// top-n over them.
	t.Logf("%s shuffles %d corpus queries: %s", shuffleConfig, len(shuffled), strings.Join(shuffled, " "))
	if len(shuffled) < minShuffled {
		t.Errorf("%s shuffles %d corpus queries, want at least %d", shuffleConfig, len(shuffled), minShuffled)
	}
	t.Logf("%s shuffles %d corpus queries", spillShuffleConfig, len(spillShuffled))
	if len(spillShuffled) < minShuffled {
		t.Errorf("%s shuffles %d corpus queries, want at least %d", spillShuffleConfig, len(spillShuffled), minShuffled)
	}
	// Its broadcast size also makes one-large-table joins split as
	// broadcast two-phase.
	t.Logf("%s splits %d corpus queries as broadcast two-phase: %s", shuffleConfig, len(bcast2p), strings.Join(bcast2p, " "))
	if len(bcast2p) < minBroadcastTwoPhase {
		t.Errorf("%s splits %d corpus queries as broadcast two-phase, want at least %d", shuffleConfig, len(bcast2p), minBroadcastTwoPhase)
	}

	// The configurations run in parallel (they share the workers, which
	// is what a busy cluster does anyway); the cases of one run in order.
	var mu sync.Mutex
	failed := map[string][]string{}
	t.Run("corpus", func(t *testing.T) {
		for _, cfg := range env.configs {
			t.Run(cfg.name, func(t *testing.T) {
				t.Parallel()
				for i, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						if d := cfg.check(c.sql, c.ordered, refs[i].res, refs[i].err); d != "" {
							mu.Lock()
							failed[cfg.name] = append(failed[cfg.name], c.name)
							mu.Unlock()
							t.Errorf("mismatch\nconfig: %s (%d workers, one-file groups %v)\ncase:   %s (%s)\nquery:  %s\n%s",
								cfg.name, cfg.workers, cfg.oneFile, c.name, c.pos, c.sql, d)
						}
					})
				}
			})
		}
	})

	t.Run("union-all-twice", func(t *testing.T) {
		for _, cfg := range env.configs {
			t.Run(cfg.name, func(t *testing.T) { checkUnionAllTwice(t, env, cfg) })
		}
	})
	t.Run("direct-scans", func(t *testing.T) {
		// The DuckDB-reader workers really read with DuckDB.
		for i, w := range env.s.Workers {
			if w.DirectScans() == 0 {
				t.Errorf("worker %d made no direct Parquet scan", i)
			}
		}
		// The default configurations gather onto a worker that reads the
		// files itself; the one-file ones pull fragments; orders has
		// positional deletes, which only iceberg-go applies.
		for _, q := range []struct {
			sql     string
			deletes bool
		}{
			{`SELECT count(DISTINCT l.l_partkey) FROM lineitem l JOIN part p ON l.l_partkey = p.p_partkey`, false},
			{`SELECT count(DISTINCT o.o_custkey) FROM orders o JOIN lineitem l ON o.o_orderkey = l.l_orderkey`, true},
		} {
			for _, cfg := range env.configs {
				plan, err := cfg.coord.Planner.Plan(context.Background(), diffSession, parse.Must(q.sql))
				if err != nil {
					t.Fatalf("%s: %v", cfg.name, err)
				}
				if plan.Strategy != planner.Gather {
					t.Fatalf("%s: %s planned as %s, want gather", cfg.name, q.sql, plan.Strategy)
				}
				direct := strings.Contains(plan.Explain, "DuckDB's Parquet reader")
				if want := !q.deletes && !cfg.oneFile && cfg.name != "w2-iceberg-go"; direct != want {
					t.Errorf("%s: %s: gathering worker reads the files itself: %v, want %v\n%s", cfg.name, q.sql, direct, want, plan.Explain)
				}
			}
		}
	})
	t.Run("exchanges", func(t *testing.T) { checkExchanges(t, env) })
	t.Run("partition-pruning", func(t *testing.T) { checkPruning(t, env) })
	t.Run("one-file-groups", func(t *testing.T) { checkOneFileGroups(t, env) })

	var summary strings.Builder
	fmt.Fprintf(&summary, "%d queries x %d configurations in %s\n", len(cases), len(env.configs), time.Since(start).Round(time.Millisecond))
	for _, st := range slices.Sorted(func(yield func(string) bool) {
		for k := range strategies {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&summary, "planned as %-9s %3d\n", st, len(strategies[st]))
	}
	for _, cfg := range env.configs {
		fmt.Fprintf(&summary, "%-10s %3d mismatches %v\n", cfg.name, len(failed[cfg.name]), failed[cfg.name])
	}
	t.Log("summary:\n" + summary.String())
}

// checkUnionAllTwice: a UNION ALL of a table with itself returns each row
// exactly twice, whatever the workers and groups.
func checkUnionAllTwice(t *testing.T, env *diffEnv, cfg *diffConfig) {
	for _, tc := range []struct{ table, col string }{{"strs", "id"}, {"orders", "o_orderkey"}, {"empty_t", "id"}} {
		q := fmt.Sprintf("SELECT %[2]s FROM %[1]s UNION ALL SELECT %[2]s FROM %[1]s ORDER BY %[2]s", tc.table, tc.col)
		got, err := runCluster(cfg.cnxn, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		want, err := runReference(env.ref, fmt.Sprintf("SELECT %s FROM %s ORDER BY 1", tc.col, tc.table))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.rows) != 2*len(want.rows) {
			t.Errorf("%s: got %d rows, want %d (each of %d rows twice)", q, len(got.rows), 2*len(want.rows), len(want.rows))
			continue
		}
		for i, w := range want.rows {
			if !rowsEqual(got.rows[2*i], w) || !rowsEqual(got.rows[2*i+1], w) {
				t.Errorf("%s: rows %d,%d are %s, %s; want %s twice", q, 2*i, 2*i+1, formatRow(got.rows[2*i]), formatRow(got.rows[2*i+1]), formatRow(w))
				break
			}
		}
	}
}

// checkExchanges: the spilling configuration's shuffles went through
// exchanges that spilled, and every producer run has ended once the
// queries are done (their consumers read or released every partition;
// none waits for its tickets to expire).
func checkExchanges(t *testing.T, env *diffEnv) {
	var runs, spilled int
	for _, w := range env.spilling {
		st := w.Exchanges()
		runs, spilled = runs+st.Runs, spilled+st.SpilledBatches
	}
	if runs == 0 || spilled == 0 {
		t.Fatalf("%s: %d producer runs, %d batches spilled; want its shuffles to spill", spillShuffleConfig, runs, spilled)
	}
	t.Logf("%s: %d producer runs, %d batches spilled", spillShuffleConfig, runs, spilled)
	deadline := time.Now().Add(time.Minute)
	for _, w := range append(slices.Clone(env.spilling), env.s.Workers...) {
		for w.Exchanges().Running > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := w.Exchanges().Running; n > 0 {
			t.Errorf("worker %s holds %d producer runs after the queries ended", w.Location(), n)
		}
	}
}

// explainFiles matches the planner's per-input file count after pruning in
// Plan.Explain ("files	local.default.t: 1 of 5 files, …").
var explainFiles = regexp.MustCompile(`(\d+) of \d+ files`)

// checkPruning: a partition predicate on an identity- or day-partitioned
// table plans only the files of the matching partitions, as many as
// iceberg-go's own scan planning with the same filter keeps.
func checkPruning(t *testing.T, env *diffEnv) {
	ctx := context.Background()
	cases := []struct {
		name, table, sql string
		filter           iceberg.BooleanExpression // the same predicate for iceberg-go
	}{
		{"identity", "nation", "SELECT n_name FROM nation WHERE n_regionkey = 1",
			iceberg.EqualTo(iceberg.Reference("n_regionkey"), int64(1))},
		{"identity-string", "lineitem", "SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_returnflag = 'R'",
			iceberg.EqualTo(iceberg.Reference("l_returnflag"), "R")},
		{"day", "orders", "SELECT o_orderkey FROM orders WHERE o_ts >= TIMESTAMPTZ '2024-03-03 00:00:00+00' AND o_ts < TIMESTAMPTZ '2024-03-04 00:00:00+00'",
			iceberg.NewAnd(
				iceberg.GreaterThanEqual(iceberg.Reference("o_ts"), iceberg.Timestamp(time.Date(2024, 3, 3, 0, 0, 0, 0, time.UTC).UnixMicro())),
				iceberg.LessThan(iceberg.Reference("o_ts"), iceberg.Timestamp(time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC).UnixMicro())))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := env.s.Mounts.LoadTable(ctx, catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema, Table: c.table})
			if err != nil {
				t.Fatal(err)
			}
			all, err := p.Table.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The bar is iceberg-go's own planning with the same filter
			// (partition and metrics pruning): files of other partitions
			// must not be planned.
			pruned, err := p.Table.Scan(table.WithRowFilter(c.filter)).PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := len(pruned)
			if want == 0 || want >= len(all) {
				t.Fatalf("bad pruning case: %d of %d files match", want, len(all))
			}
			plan, err := env.configs[len(env.configs)-1].coord.Planner.Plan(ctx, diffSession, parse.Must(c.sql))
			if err != nil {
				t.Fatal(err)
			}
			m := explainFiles.FindStringSubmatch(plan.Explain)
			if m == nil {
				t.Fatalf("no file count in the plan's Explain:\n%s", plan.Explain)
			}
			got, _ := strconv.Atoi(m[1])
			if got != want {
				t.Errorf("%s: planned %d of %d files, want %d (only the matching partitions)\n%s", c.sql, got, len(all), want, plan.Explain)
			}
		})
	}
}

// TestDiffResults checks the comparison itself: tolerance, multisets,
// order, NULLs and schemas.
func TestDiffResults(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Float64}}, nil)
	other := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	s := func(v string) cellValue { return cellValue{s: v} }
	f := func(v float64) cellValue { return cellValue{isFloat: true, f: v} }
	null := cellValue{null: true}
	res := func(sc *arrow.Schema, rows ...[]cellValue) typedResult { return typedResult{schema: sc, rows: rows} }
	a := res(sch, []cellValue{s("a"), f(1)}, []cellValue{s("b"), f(1e9)}, []cellValue{s("c"), null})
	for _, c := range []struct {
		name      string
		got, want typedResult
		ordered   bool
		same      bool
	}{
		{"equal", a, a, true, true},
		{"within tolerance", res(sch, []cellValue{s("a"), f(1 + 5e-10)}), res(sch, []cellValue{s("a"), f(1)}), true, true},
		{"beyond tolerance", res(sch, []cellValue{s("a"), f(1 + 2e-9)}), res(sch, []cellValue{s("a"), f(1)}), true, false},
		{"relative to magnitude", res(sch, []cellValue{s("a"), f(1e9 + 0.5)}), res(sch, []cellValue{s("a"), f(1e9)}), true, true},
		{"zero is exact", res(sch, []cellValue{s("a"), f(1e-300)}), res(sch, []cellValue{s("a"), f(0)}), true, false},
		{"infinity is exact", res(sch, []cellValue{s("a"), f(math.MaxFloat64)}), res(sch, []cellValue{s("a"), f(math.Inf(1))}), true, false},
		{"infinities sort", res(sch, []cellValue{s("a"), f(math.Inf(1))}, []cellValue{s("b"), f(math.MaxFloat64)}, []cellValue{s("c"), f(math.NaN())}),
			res(sch, []cellValue{s("c"), f(math.NaN())}, []cellValue{s("b"), f(math.MaxFloat64)}, []cellValue{s("a"), f(math.Inf(1))}), false, true},
		{"multiset order-free", res(sch, a.rows[2], a.rows[0], a.rows[1]), a, false, true},
		{"ordered sees order", res(sch, a.rows[2], a.rows[0], a.rows[1]), a, true, false},
		{"duplicates count", res(sch, a.rows[0], a.rows[0], a.rows[1]), res(sch, a.rows[0], a.rows[1], a.rows[1]), false, false},
		{"missing row", res(sch, a.rows[0], a.rows[1]), a, false, false},
		{"null is not a value", res(sch, []cellValue{s("c"), f(0)}), res(sch, []cellValue{s("c"), null}), false, false},
		{"schema type", res(other), res(sch), false, false},
	} {
		d := diffResults(c.got, c.want, c.ordered)
		if (d == "") != c.same {
			t.Errorf("%s: same=%v, diff:\n%s", c.name, d == "", d)
		}
	}
}

// checkOneFileGroups: the one-file configurations really plan one file
// task per endpoint of a scatter, so the corpus sees the most groups.
func checkOneFileGroups(t *testing.T, env *diffEnv) {
	ctx := context.Background()
	p, err := env.s.Mounts.LoadTable(ctx, catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema, Table: "lineitem"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := p.Table.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range env.configs {
		if !cfg.oneFile {
			continue
		}
		plan, err := cfg.coord.Planner.Plan(ctx, diffSession, parse.Must("SELECT * FROM lineitem"))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Strategy != planner.Scatter || len(plan.Endpoints) != len(tasks) {
			t.Errorf("%s: %s with %d endpoints for %d files, want scatter with one endpoint per file\n%s",
				cfg.name, plan.Strategy, len(plan.Endpoints), len(tasks), plan.Explain)
		}
	}
}
