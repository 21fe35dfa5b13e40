package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/icefloe/icefloe/internal/engine"
)

// TestProperty generates tables of edge values of every type (NaN, ±0,
// ±Infinity, empty and long multi-byte strings, empty and 0xFF binaries,
// integer and decimal extremes, dates and timestamps at their limits,
// UUIDs, NULLs), partitioned by identity, truncate, bucket and the time
// transforms or not at all, format version 2 or 3, and fills each through
// one write path (INSERT … VALUES, INSERT … SELECT, CTAS, bulk ingest,
// UPDATE), in one or more commits. Generated filters (comparisons, IN,
// BETWEEN, LIKE, IS NULL, NOT, casts, AND/OR) then run through every
// configuration of the differential harness and are compared with
// single-node DuckDB holding the same rows; and pyiceberg scans the same
// tables with row filters (its own manifest and metrics pruning over the
// metadata icefloe wrote) and is compared with the same DuckDB. A
// mismatch is shrunk to a small table and printed as a reproduction.
//
// ICEFLOE_PROPERTY_SEED (default 1), ICEFLOE_PROPERTY_TABLES (default 12)
// and ICEFLOE_PROPERTY_DURATION (e.g. 30m: tables until then) set the run;
// ICEFLOE_PROPERTY_ONLY=n makes and checks only table n of the run.
func TestProperty(t *testing.T) {
	seed := envInt(t, "ICEFLOE_PROPERTY_SEED", 1)
	tables := envInt(t, "ICEFLOE_PROPERTY_TABLES", 12)
	only := envInt(t, "ICEFLOE_PROPERTY_ONLY", -1)
	var deadline time.Time
	if d := os.Getenv("ICEFLOE_PROPERTY_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("ICEFLOE_PROPERTY_DURATION: %v", err)
		}
		deadline = time.Now().Add(dur)
	}
	start := time.Now()
	pe := startPropEnv(t)
	for i := 0; ; i++ {
		if deadline.IsZero() && i >= max(tables, only+1) || !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		if only >= 0 && i != only {
			continue
		}
		// Each table has a random stream of its own, so that one can be
		// made again alone.
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		tbl := genTable(r, fmt.Sprintf("p%d_%d", seed, i), writePaths[i%len(writePaths)])
		if err := pe.create(tbl, tbl.name); err != nil {
			t.Errorf("seed %d, table %d: %v\n%s", seed, i, err, pe.script(tbl, tbl.name))
			continue
		}
		pe.stats.tables++
		if testing.Verbose() {
			t.Logf("table %d: %s; %s, %d rows in %d commits", i, tbl.ddl(), tbl.path, len(tbl.rows), min(tbl.commits, len(tbl.rows)))
			if used := pe.layouts[tbl.name]; len(used) > 0 {
				t.Logf("  sent as %s", strings.Join(slices.Compact(slices.Sorted(slices.Values(used))), ", "))
			}
		}
		pe.check(r, tbl)
	}
	t.Logf("seed %d: %d tables, %d SQL filters and %d queries with parameters x %d configurations (%d queries), %d pyiceberg row filters, %d mismatches, in %s",
		seed, pe.stats.tables, pe.stats.sql, pe.stats.params, len(pe.env.configs), (pe.stats.sql+pe.stats.params)*len(pe.env.configs), pe.stats.py, pe.stats.mismatches,
		time.Since(start).Round(time.Second))
	if pe.stats.params > 0 && pe.stats.paramsAnswered == 0 {
		t.Errorf("the reference answered none of the %d queries with parameters", pe.stats.params)
	}
	t.Logf("queries with parameters the reference answered: %d of %d runs", pe.stats.paramsAnswered, pe.stats.params*len(pe.env.configs))
	for _, why := range slices.Sorted(maps.Keys(pe.stats.pySkipped)) {
		t.Logf("pyiceberg cases not run: %d: %s", pe.stats.pySkipped[why], why)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// propEnv is the property test's cluster (every differential
// configuration), its reference DuckDB and its pyiceberg scanner.
type propEnv struct {
	t     *testing.T
	env   *diffEnv
	write adbc.Connection // writes go through the standalone's coordinator
	ref   *engine.Conn
	py    *pyScanner
	seq   int
	// layouts are the Arrow layouts the last bulk ingest into each table
	// sent its columns in ("c1 as string_view").
	layouts map[string][]string
	stats   struct {
		tables, sql, params, py, mismatches int
		paramsAnswered                      int            // runs of a query with parameters the reference answered
		pySkipped                           map[string]int // pyiceberg cases not run, by reason
	}
}

func startPropEnv(t *testing.T) *propEnv {
	env := startDiffCluster(t, []int{1, 2, 4}, []bool{false, true})
	ref := referenceConn(t, env.s.Mounts, nil) // filled by create, not from the catalog
	pe := &propEnv{t: t, env: env, write: adbcConn(t, env.s.Addr()), ref: ref, py: startPyScanner(t, env.dataDir)}
	pe.stats.pySkipped = map[string]int{}
	pe.layouts = map[string][]string{}
	return pe
}

// create makes tbl in the cluster under name, through its write path,
// and in the reference with INSERT … VALUES and the same UPDATEs.
func (pe *propEnv) create(tbl *propTable, name string) error {
	ctx := context.Background()
	ref := []string{"CREATE TABLE " + name + " " + tbl.columnsSQL()}
	ref = append(ref, tbl.inserts(name, 1)...)
	for _, u := range tbl.updates {
		ref = append(ref, u.sql(name))
	}
	for _, q := range ref {
		if err := pe.ref.Exec(ctx, q); err != nil {
			return fmt.Errorf("reference: %s: %v", abbrev(q), err)
		}
	}
	for _, q := range pe.statements(tbl, name) {
		if q == ingestMarker {
			if err := pe.ingest(tbl, name); err != nil {
				return err
			}
			continue
		}
		if _, err := tryUpdate(pe.t, pe.write, q); err != nil {
			return fmt.Errorf("%s: %v", abbrev(q), err)
		}
	}
	return nil
}

// ingestMarker stands for the bulk ingest among a table's statements.
const ingestMarker = "-- bulk ingest (ADBC adbc_ingest, mode append) of the rows above, one DoPut per commit"

// statements are the SQL that makes tbl under name in the cluster.
func (pe *propEnv) statements(tbl *propTable, name string) []string {
	src := name + "_src"
	srcDDL := fmt.Sprintf("CREATE TABLE %s %s WITH ('format-version' = '%d')", src, tbl.columnsSQL(), tbl.version)
	switch tbl.path {
	case viaInsertSelect:
		return append(append([]string{srcDDL}, tbl.inserts(src, tbl.commits)...),
			"CREATE TABLE "+name+" "+tbl.columnsSQL()+tbl.clauses(), "INSERT INTO "+name+" SELECT * FROM "+src)
	case viaCTAS:
		return append(append([]string{srcDDL}, tbl.inserts(src, tbl.commits)...),
			"CREATE TABLE "+name+tbl.clauses()+" AS SELECT * FROM "+src)
	case viaIngest:
		return []string{"CREATE TABLE " + name + " " + tbl.columnsSQL() + tbl.clauses(), ingestMarker}
	case viaMerge:
		// The last row comes in through MERGE … INSERT VALUES, the changes
		// through MERGE … UPDATE SET.
		last := tbl.rows[len(tbl.rows)-1]
		out := []string{"CREATE TABLE " + name + " " + tbl.columnsSQL() + tbl.clauses()}
		out = append(out, tbl.insertsOf(name, tbl.rows[:len(tbl.rows)-1], tbl.commits)...)
		vals := []string{"s.id"}
		for j, v := range last[1:] {
			vals = append(vals, v.literal(tbl.cols[j].typ.sql))
		}
		out = append(out, fmt.Sprintf("MERGE INTO %[1]s USING (SELECT %[2]s::BIGINT AS id) AS s ON %[1]s.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (%[3]s)",
			name, last[0].text, strings.Join(vals, ", ")))
		ids := make([]string, len(tbl.rows))
		for i, row := range tbl.rows {
			ids[i] = row[0].text
		}
		for _, u := range tbl.updates {
			out = append(out, u.merge(name, ids))
		}
		return out
	}
	out := append([]string{"CREATE TABLE " + name + " " + tbl.columnsSQL() + tbl.clauses()}, tbl.inserts(name, tbl.commits)...)
	for _, u := range tbl.updates {
		out = append(out, u.sql(name))
	}
	return out
}

// ingest bulk-ingests the rows of tbl into name, one DoPut per commit
// (and reference batch), as the reference's Arrow batches of them with
// columns in other layouts of their types (relayout): what a client
// holding the same rows sends.
func (pe *propEnv) ingest(tbl *propTable, name string) error {
	ctx := context.Background()
	pe.layouts[name] = nil
	for _, chunk := range splitRows(tbl.rows, tbl.commits) {
		q := fmt.Sprintf("SELECT * FROM %s WHERE id BETWEEN %s AND %s ORDER BY id", name, chunk[0][0].text, chunk[len(chunk)-1][0].text)
		rdr, err := pe.ref.Query(ctx, q, engine.QueryOptions{})
		if err != nil {
			return fmt.Errorf("reference: %s: %v", q, err)
		}
		for rdr.Next() {
			rec, used, err := relayout(ctx, func(col int) *rand.Rand { return layoutRand(tbl.name, col) }, rdr.RecordBatch())
			if err != nil {
				rdr.Release()
				return fmt.Errorf("relayout: %v", err)
			}
			pe.layouts[name] = append(pe.layouts[name], used...)
			one, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			rec.Release()
			if err != nil {
				rdr.Release()
				return err
			}
			_, err = ingest(pe.t, pe.write, name, adbc.OptionValueIngestModeAppend, one)
			one.Release()
			if err != nil {
				rdr.Release()
				return fmt.Errorf("bulk ingest into %s (%s): %v", name, strings.Join(pe.layouts[name], ", "), err)
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return fmt.Errorf("reference: %s: %v", q, err)
		}
	}
	return nil
}

// script prints how tbl is made under name: the cluster's statements,
// with the rows of a bulk ingest as INSERT … VALUES.
func (pe *propEnv) script(tbl *propTable, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s, format version %d\n", tbl.path, tbl.version)
	for _, q := range pe.statements(tbl, name) {
		if q == ingestMarker {
			fmt.Fprintf(&b, "-- the rows of the bulk ingest (ADBC adbc_ingest, mode append, %d DoPut):\n", min(tbl.commits, len(tbl.rows)))
			if used := slices.Compact(slices.Sorted(slices.Values(pe.layouts[name]))); len(used) > 0 {
				fmt.Fprintf(&b, "-- sent with columns in other Arrow layouts: %s\n", strings.Join(used, ", "))
			}
			for _, ins := range tbl.inserts(name, tbl.commits) {
				fmt.Fprintf(&b, "--   %s;\n", ins)
			}
			continue
		}
		fmt.Fprintf(&b, "%s;\n", q)
	}
	return b.String()
}

func abbrev(q string) string {
	if len(q) > 300 {
		return q[:300] + "…"
	}
	return q
}

// check runs generated filters over tbl on every configuration and
// through pyiceberg.
func (pe *propEnv) check(r *rand.Rand, tbl *propTable) {
	ft := tbl.fuzzTable(r)
	preds := append(pe.boundaryFilters(r, tbl), collisionFilters(tbl)...)
	for k := range 8 {
		preds = append(preds, genSQLFilter(r, ft, k%3))
	}
	for k, pred := range preds {
		// Half the queries read only the columns the filter names (and
		// id), which more often qualifies for direct Parquet scans.
		cols := "*"
		if k%2 == 1 {
			cols = strings.Join(slices.Compact(slices.Sorted(slices.Values(append([]string{"id"}, propColumn.FindAllString(pred, -1)...)))), ", ")
		}
		pe.stats.sql++
		if os.Getenv("ICEFLOE_PROPERTY_TRACE") != "" {
			pe.t.Logf("  SELECT %s WHERE %s", cols, abbrev(pred))
		}
		for _, cfg := range pe.env.configs {
			if d := pe.sqlMismatch(cfg, cols, tbl.name, pred); d != "" {
				pe.report(tbl, fmt.Sprintf("configuration %s (%d workers, one-file groups %v)", cfg.name, cfg.workers, cfg.oneFile), d,
					"SELECT "+cols+" FROM %s WHERE "+pred, func(c *propTable, name string) string { return pe.sqlMismatch(cfg, cols, name, pred) })
				break
			}
		}
	}
	pe.checkParams(r, tbl)
	if why := pe.pyUnreadable(tbl); why != "" {
		pe.stats.pySkipped[why] += 4
		return
	}
	for range 4 {
		pf := genPyFilter(r, tbl, 2)
		pe.stats.py++
		if d := pe.pyMismatch(tbl.name, pf); d != "" {
			js, _ := json.Marshal(pf.tree)
			pe.report(tbl, "pyiceberg row filter "+string(js), d, "SELECT id FROM %s WHERE "+pf.sql,
				func(c *propTable, name string) string { return pe.pyMismatch(name, pf) })
		}
	}
}

// checkParams runs generated queries with parameters (genParamQuery)
// over tbl on every configuration.
func (pe *propEnv) checkParams(r *rand.Rand, tbl *propTable) {
	for range 4 {
		q, params := genParamQuery(r, tbl)
		if q == "" {
			return
		}
		pe.stats.params++
		// The query over another table name, for the shrunk tables.
		tmpl := strings.ReplaceAll(strings.ReplaceAll(q, "%", "%%"), tbl.name, "%[1]s")
		for _, cfg := range pe.env.configs {
			if d := pe.paramMismatch(cfg, q, params); d != "" {
				pe.report(tbl, fmt.Sprintf("configuration %s, parameters %s", cfg.name, strings.Join(literals(params), ", ")), d, tmpl,
					func(c *propTable, name string) string { return pe.paramMismatch(cfg, fmt.Sprintf(tmpl, name), params) })
				break
			}
		}
	}
}

// pyUnreadable says why pyiceberg 0.10 cannot scan tbl at all, or "":
//   - a partition field over a decimal of scale 0: iceberg-go writes the
//     manifests' Avro decimal type without "scale" (Avro's default is 0)
//     and pyiceberg requires the key (KeyError: 'scale');
//   - two UUID partition fields: iceberg-go defines the Avro fixed type
//     uuid_fixed once and refers to it by name the second time, which
//     pyiceberg's Avro reader cannot resolve (Type not recognized);
//   - no column pyiceberg can filter (pyColumns).
func (pe *propEnv) pyUnreadable(tbl *propTable) string {
	uuids := 0
	for _, p := range tbl.parts {
		for _, c := range tbl.cols {
			if propColumn.FindString(p) != c.name {
				continue
			}
			if strings.HasSuffix(c.typ.sql, ",0)") && !strings.HasPrefix(p, "bucket") {
				return "partition field over a decimal of scale 0 (iceberg-go omits the Avro scale; pyiceberg needs it)"
			}
			if c.typ.sql == "UUID" && !strings.HasPrefix(p, "bucket") {
				uuids++
			}
		}
	}
	if uuids > 1 {
		return "two UUID partition fields (pyiceberg cannot resolve the named Avro type iceberg-go reuses)"
	}
	if len(tbl.pyColumns()) == 0 {
		return "only UUID and nested columns (pyarrow has no uuid comparison; pyiceberg no nested filters)"
	}
	return ""
}

// boundaryFilters are filters at the edges of the statistics of one
// column of tbl (and of each float column): comparisons with its smallest
// and largest value, and with NaN and the infinities for floats, as the
// reference holds them after every write. Bounds that miss a value show
// right there.
func (pe *propEnv) boundaryFilters(r *rand.Rand, tbl *propTable) []string {
	cols := []propCol{tbl.cols[r.IntN(len(tbl.cols))]}
	for _, c := range tbl.cols {
		if c.typ.kind == kFloat && c != cols[0] {
			cols = append(cols, c)
		}
	}
	var out []string
	for _, c := range cols {
		if c.typ.nested {
			continue // no statistics, and DuckDB prints them other than as literals
		}
		nonNaN := ""
		if c.typ.kind == kFloat {
			nonNaN = " AND NOT isnan(" + c.name + ")"
		}
		var lo, hi *string
		row := pe.ref.DB().QueryRowContext(context.Background(),
			fmt.Sprintf("SELECT CAST(min(%[1]s) AS VARCHAR), CAST(max(%[1]s) AS VARCHAR) FROM %[2]s WHERE %[1]s IS NOT NULL%[3]s", c.name, tbl.name, nonNaN))
		if err := row.Scan(&lo, &hi); err != nil || lo == nil || hi == nil || c.typ.kind == kBool {
			continue
		}
		ops := []string{"=", "<", "<=", ">", ">=", "<>"}
		for _, v := range []string{*lo, *hi} {
			lit := propValue{text: v}.filterLiteral(c.typ.sql)
			out = append(out, fmt.Sprintf("%s %s %s", c.name, ops[r.IntN(len(ops))], lit))
			out = append(out, fmt.Sprintf("NOT (%s %s %s)", c.name, ops[r.IntN(len(ops))], lit))
		}
		if c.typ.kind == kFloat {
			for _, v := range []string{"NaN", "Infinity", "-Infinity"} {
				out = append(out, fmt.Sprintf("%s %s %s", c.name, ops[r.IntN(len(ops))], propValue{text: v}.literal(c.typ.sql)))
			}
		}
	}
	return out
}

// collisionFilters are filters on each partition source whose values can
// share a partition path with NULL (see propType.collide): IS NULL, IS NOT
// NULL and = each such value, which prune on the partition values.
func collisionFilters(tbl *propTable) []string {
	var out []string
	for _, c := range tbl.cols {
		if len(c.typ.collide) == 0 || !slices.ContainsFunc(tbl.parts, func(p string) bool { return propColumn.FindString(p) == c.name }) {
			continue
		}
		out = append(out, c.name+" IS NULL", c.name+" IS NOT NULL")
		for _, v := range slices.Compact(slices.Sorted(slices.Values(c.typ.collide))) {
			out = append(out, c.name+" = "+propValue{text: v}.filterLiteral(c.typ.sql))
		}
	}
	return out
}

// sqlMismatch compares SELECT cols FROM name WHERE pred on cfg with the
// reference; "" when they agree.
func (pe *propEnv) sqlMismatch(cfg *diffConfig, cols, name, pred string) string {
	q := "SELECT " + cols + " FROM " + name + " WHERE " + pred
	want, wantErr := runReference(pe.ref, q)
	return cfg.check(q, false, want, wantErr)
}

// pyMismatch compares pyiceberg's scan of name with pf with the ids the
// reference selects with pf.sql; "" when they agree.
func (pe *propEnv) pyMismatch(name string, pf pyFilter) string {
	want, err := runReference(pe.ref, "SELECT id FROM "+name+" WHERE "+pf.sql+" ORDER BY id")
	if err != nil {
		return fmt.Sprintf("reference failed: %v", err)
	}
	wantIDs := make([]int64, len(want.rows))
	for i, row := range want.rows {
		wantIDs[i], _ = strconv.ParseInt(row[0].s, 10, 64)
	}
	got, why, err := pe.py.scan(name, pf.tree)
	if err != nil {
		return fmt.Sprintf("pyiceberg: %v", err)
	}
	if why != "" {
		pe.stats.pySkipped[why]++
		return ""
	}
	if !slices.Equal(got, wantIDs) {
		return fmt.Sprintf("pyiceberg returned ids %v, DuckDB %v", got, wantIDs)
	}
	return ""
}

// report shrinks tbl to a small table on which mismatch still differs and
// fails the test with a reproduction: the statements that make it, the
// query and the difference.
func (pe *propEnv) report(tbl *propTable, where, diff, query string, mismatch func(*propTable, string) string) {
	pe.stats.mismatches++
	small, sname, sdiff := pe.shrink(tbl, query, mismatch)
	if sdiff == "" {
		small, sname, sdiff = tbl, tbl.name, diff
	}
	pe.t.Errorf("property mismatch on %s\n-- reproduction (%d of %d rows):\n%s%s;\n-- difference:\n%s-- on the generated table:\n%s",
		where, len(small.rows), len(tbl.rows), pe.script(small, sname), fmt.Sprintf(query, sname), sdiff, diff)
}

var propColumn = regexp.MustCompile(`\bc\d+\b`)

// shrink drops columns the query does not name and rows (halves, then
// single rows) while mismatch still reports a difference on the smaller
// table, made afresh each time; it stops after 80 tries.
func (pe *propEnv) shrink(tbl *propTable, query string, mismatch func(*propTable, string) string) (*propTable, string, string) {
	cur, curName, curDiff := tbl, tbl.name, ""
	named := map[string]bool{}
	for _, c := range propColumn.FindAllString(query, -1) {
		named[c] = true
	}
	tries := 0
	try := func(c *propTable) bool {
		if tries >= 80 {
			return false
		}
		tries++
		pe.seq++
		name := fmt.Sprintf("%s_m%d", tbl.name, pe.seq)
		if err := pe.create(c, name); err != nil {
			return false
		}
		if d := mismatch(c, name); d != "" {
			cur, curName, curDiff = c, name, d
			return true
		}
		return false
	}
	for i := len(cur.cols) - 1; i >= 0 && len(cur.cols) > 1; i-- {
		if !named[cur.cols[i].name] {
			try(cur.withoutColumn(i))
		}
	}
	try(cur.withCommits(1))
	for n := 2; len(cur.rows) > 1 && tries < 80; {
		chunk := (len(cur.rows) + n - 1) / n
		removed := false
		for lo := 0; lo < len(cur.rows); lo += chunk {
			if try(cur.withoutRows(lo, min(lo+chunk, len(cur.rows)))) {
				removed = true
				n = max(n-1, 2)
				break
			}
		}
		if !removed {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(cur.rows))
		}
	}
	return cur, curName, curDiff
}

func (t *propTable) clone() *propTable {
	c := *t
	c.cols = slices.Clone(t.cols)
	c.parts = slices.Clone(t.parts)
	c.rows = slices.Clone(t.rows)
	c.updates = slices.Clone(t.updates)
	return &c
}

// withoutColumn drops column i (and its partition fields and UPDATEs).
func (t *propTable) withoutColumn(i int) *propTable {
	c := t.clone()
	name := t.cols[i].name
	c.cols = slices.Delete(c.cols, i, i+1)
	mentions := func(s string) bool {
		return strings.Contains(s+" ", name+" ") || strings.Contains(s, name+")") || strings.Contains(s, name+",")
	}
	c.parts = slices.DeleteFunc(c.parts, mentions)
	c.updates = slices.DeleteFunc(c.updates, func(u propUpdate) bool { return u.col == name })
	for k, row := range c.rows {
		c.rows[k] = slices.Delete(slices.Clone(row), i+1, i+2)
	}
	return c
}

func (t *propTable) withCommits(n int) *propTable {
	c := t.clone()
	c.commits = n
	return c
}

func (t *propTable) withoutRows(lo, hi int) *propTable {
	c := t.clone()
	c.rows = slices.Delete(c.rows, lo, hi)
	return c
}

// pyScanner is a long-running integration/interop/row_filters.py.
type pyScanner struct {
	cmd *exec.Cmd
	in  *json.Encoder
	out *bufio.Scanner
}

// startPyScanner installs the interop suite's virtualenv if needed (it
// is the interop suite's, so the same install serves both) and starts the
// scanner over the cluster's data directory.
func startPyScanner(t *testing.T, dataDir string) *pyScanner {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(root, "integration", ".venv-interop")
	ensure := exec.Command(filepath.Join(root, "scripts", "ensure-venv"), venv, filepath.Join(root, "integration", "interop", "requirements.txt"))
	if out, err := ensure.CombinedOutput(); err != nil {
		t.Fatalf("install the pyiceberg virtualenv: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), filepath.Join(root, "integration", "interop", "row_filters.py"), dataDir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pyiceberg scanner: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 64<<20)
	return &pyScanner{cmd: cmd, in: json.NewEncoder(stdin), out: out}
}

// scan returns the sorted ids of table's rows that filter selects, or
// why pyiceberg cannot evaluate it (a limitation of its own).
func (p *pyScanner) scan(table string, filter map[string]any) ([]int64, string, error) {
	if err := p.in.Encode(map[string]any{"table": table, "filter": filter}); err != nil {
		return nil, "", err
	}
	if !p.out.Scan() {
		return nil, "", fmt.Errorf("the scanner ended: %v", p.out.Err())
	}
	var res struct {
		IDs         []int64 `json:"ids"`
		Error       string  `json:"error"`
		Unsupported string  `json:"unsupported"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &res); err != nil {
		return nil, "", err
	}
	if res.Error != "" {
		return nil, "", fmt.Errorf("%s", res.Error)
	}
	if res.IDs == nil {
		res.IDs = []int64{}
	}
	return res.IDs, res.Unsupported, nil
}
