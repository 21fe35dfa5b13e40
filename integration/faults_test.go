package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	icecat "github.com/apache/iceberg-go/catalog"

	"github.com/icefloe/icefloe/catalog"
)

// TestStatementIDRetryAfterCoordinatorKill: an INSERT sent under a
// client's statement id, whose coordinator is killed (SIGKILL) at a random
// moment of it, and sent again under the same id to the restarted
// coordinator, lands exactly once: the retry either commits it or answers
// AlreadyExists because the first run had committed. The table is at a
// snapshot with or without each killed run, never between, and
// remove_orphan_files finds the files of the runs that did not commit. Outcomes are counted
// over several runs; a run whose rows land twice or not at all is wrong.
func TestStatementIDRetryAfterCoordinatorKill(t *testing.T) {
	bin := icefloeBin(t)
	dir := t.TempDir()
	env := []string{membershipKey}
	w := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	cargs := []string{"coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker", w.field("worker")}
	c := startProc(t, bin, env, cargs...)
	seedTable(t, adbcConn(t, c.addr()), "src", 4000)
	execUpdate(t, adbcConn(t, c.addr()), `CREATE TABLE dst (run BIGINT, id BIGINT)`)
	insert := func(run int) string {
		if run%2 == 0 {
			return fmt.Sprintf(`INSERT INTO dst SELECT %d, id FROM src`, run)
		}
		return fmt.Sprintf(`INSERT INTO dst VALUES (%d, 1), (%d, 2)`, run, run)
	}
	want := func(run int) int64 {
		if run%2 == 0 {
			return 4000
		}
		return 2
	}
	withID := func(addr string, run int) adbc.Connection {
		return adbcConn(t, addr, map[string]string{"adbc.flight.sql.rpc.call_header.x-icefloe-statement-id": fmt.Sprintf("dst-load-%d", run)})
	}
	// How long a statement takes, to spread the kills over it.
	start := time.Now()
	if n, err := tryUpdate(t, withID(c.addr(), 0), insert(0)); err != nil || n != want(0) {
		t.Fatalf("first insert: %d, %v", n, err)
	}
	took := time.Since(start)
	wantRows(t, adbcConn(t, c.addr()), `SELECT count(*) FROM "dst$snapshots" WHERE summary['icefloe.statement-id'] = 'dst-load-0'`, "1")
	_, err := tryUpdate(t, withID(c.addr(), 0), insert(0))
	wantStatus(t, err, adbc.StatusAlreadyExists)
	if !strings.Contains(err.Error(), "dst-load-0") {
		t.Fatalf("the repeated statement: %v, want its id named", err)
	}

	const runs = 6
	outcome := map[string]int{}
	for run := 1; run <= runs; run++ {
		done := make(chan error, 1)
		cnxn := withID(c.addr(), run)
		go func() { _, err := tryUpdate(t, cnxn, insert(run)); done <- err }()
		time.Sleep(time.Duration(rand.Int64N(int64(took) + 1)))
		c.cmd.Process.Kill()
		first := <-done
		c.waitExit(10 * time.Second)
		c = startProc(t, bin, env, cargs...)
		n, err := tryUpdate(t, withID(c.addr(), run), insert(run))
		var ae adbc.Error
		switch {
		case err == nil && n == want(run):
			outcome["retry committed"]++
		case errors.As(err, &ae) && ae.Code == adbc.StatusAlreadyExists:
			outcome["retry found it committed"]++
		default:
			t.Fatalf("run %d: the retry: %d, %v", run, n, err)
		}
		if first == nil {
			outcome["first answered before the kill"]++
		}
		got := mustQuery(t, adbcConn(t, c.addr()), fmt.Sprintf(`SELECT count(*) FROM dst WHERE run = %d`, run)).rows[0]
		if got != fmt.Sprint(want(run)) {
			t.Fatalf("run %d: %s rows landed, want %d (wrong)", run, got, want(run))
		}
	}
	cnxn := adbcConn(t, c.addr())
	wantRows(t, cnxn, `SELECT count(*) FROM dst`, fmt.Sprint(4000+3*4000+3*2))
	// The files of runs killed before their commit are found by the
	// documented cleanup, and only they.
	strays := func() int {
		files, err := filepath.Glob(filepath.Join(tableFolder(t, dir, "dst"), "data", "*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(files) - int(atoi(t, mustQuery(t, cnxn, `SELECT count(*) FROM "dst$files"`).rows[0]))
	}
	outcome["files of killed runs"] = strays()
	cutoff := time.Now().UTC().Add(time.Minute).Format("2006-01-02 15:04:05")
	mustQuery(t, cnxn, fmt.Sprintf(`CALL system.remove_orphan_files(table => 'dst', older_than => TIMESTAMP '%s', override_min_age => true)`, cutoff))
	if n := strays(); n != 0 {
		t.Fatalf("remove_orphan_files left %d files the table does not reference", n)
	}
	wantRows(t, cnxn, `SELECT count(*) FROM dst`, fmt.Sprint(4000+3*4000+3*2))
	t.Logf("statement %s; outcomes over %d killed runs: %v; wrong: 0", took.Round(time.Millisecond), runs, outcome)
}

// TestKilledWorkerSpillReclaimed: the spill folder of a worker killed by
// SIGKILL is removed when the next worker on the machine starts, while a
// running worker's folder stays.
func TestKilledWorkerSpillReclaimed(t *testing.T) {
	bin := icefloeBin(t)
	tmp := t.TempDir()
	env := []string{membershipKey, "TMPDIR=" + tmp}
	spills := func() []string {
		d, err := filepath.Glob(filepath.Join(tmp, "icefloe-spill-*"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	start := func() *role {
		return startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	}
	killed, live := start(), start()
	if got := spills(); len(got) != 2 {
		t.Fatalf("spill folders of two workers: %v", got)
	}
	before := spills()
	killed.cmd.Process.Kill()
	killed.waitExit(10 * time.Second)
	// Age the folders past the grace a just-made folder gets.
	old := time.Now().Add(-time.Hour)
	for _, d := range before {
		if err := os.Chtimes(filepath.Join(d, ".icefloe-spill.lock"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	start()
	after := spills()
	if len(after) != 2 {
		t.Fatalf("spill folders after a worker was killed and another started: %v (before %v)", after, before)
	}
	live.signal(syscall.SIGTERM)
	if err := live.waitExit(30 * time.Second); err != nil {
		t.Fatalf("worker exited with %v", err)
	}
	if got := spills(); len(got) != 1 {
		t.Fatalf("spill folders after the live worker stopped: %v", got)
	}
}

// TestWorkerKilledDuringInsertSelect: a worker killed (SIGKILL) at a
// random moment of an INSERT … SELECT whose fragments it runs: the
// statement either answers the full count (run again on the other worker
// when the kill hit its fragments), or fails with an error saying
// nothing was committed and commits nothing; no file of it is left
// outside the table, and the same statement then succeeds. Outcomes are
// counted over several runs; a partial commit or a stray file is wrong.
func TestWorkerKilledDuringInsertSelect(t *testing.T) {
	dir, c, worker := announcedCluster(t)
	w1 := worker()
	cnxn := adbcConn(t, c.addr())
	seedTable(t, cnxn, "src", 8000)
	execUpdate(t, cnxn, `CREATE TABLE dst (run BIGINT, id BIGINT)`)
	insert := func(run int) string { return fmt.Sprintf(`INSERT INTO dst SELECT %d, id FROM src`, run) }
	rows := func(run int) string {
		return mustQuery(t, cnxn, fmt.Sprintf(`SELECT count(*) FROM dst WHERE run = %d`, run)).rows[0]
	}
	strays := func() int {
		files, err := filepath.Glob(filepath.Join(tableFolder(t, dir, "dst"), "data", "*"))
		if err != nil {
			t.Fatal(err)
		}
		listed := mustQuery(t, cnxn, `SELECT count(*) FROM "dst$files"`).rows[0]
		return len(files) - int(atoi(t, listed))
	}
	start := time.Now()
	execUpdate(t, cnxn, insert(0))
	took := time.Since(start)

	const runs = 5
	outcome := map[string]int{}
	for run := 1; run <= runs; run++ {
		w2 := worker()
		waitPlanned(t, c.addr(), `SELECT * FROM src`, 10*time.Second, w1.field("worker"), w2.field("worker"))
		done := make(chan error, 1)
		go func() {
			n, err := tryUpdate(t, cnxn, insert(run))
			if err == nil && n != 8000 {
				err = fmt.Errorf("counted %d", n)
			}
			done <- err
		}()
		time.Sleep(time.Duration(rand.Int64N(int64(took) + 1)))
		w2.cmd.Process.Kill()
		err := <-done
		w2.waitExit(10 * time.Second)
		switch got := rows(run); {
		case err == nil && got == "8000":
			outcome["full answer"]++
		case err != nil && got == "0" && strings.Contains(err.Error(), "nothing was committed"):
			outcome["clear error"]++
			if n, rerr := tryUpdate(t, cnxn, insert(run)); rerr != nil || n != 8000 || rows(run) != "8000" {
				t.Fatalf("run %d: the same statement again: %d, %v", run, n, rerr)
			}
		default:
			t.Fatalf("run %d (wrong): %v, %s rows committed\ncoordinator:\n%s", run, err, got, c.log())
		}
		// A fragment cancelled mid-file is swept again shortly after.
		for deadline := time.Now().Add(10 * time.Second); strays() != 0 && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if n := strays(); n != 0 {
			t.Fatalf("run %d (wrong): %d files of the table's folder are not in the table", run, n)
		}
	}
	outcome["of them run again"] = strings.Count(c.log(), "running it again on the others")
	t.Logf("statement %s; outcomes over %d runs with a worker killed: %v; wrong: 0", took.Round(time.Millisecond), runs, outcome)
}

// TestCoordinatorKilledDuringCreate: a statement that makes a table — a
// CREATE TABLE … AS, an ingest create, an ingest replace with a stream of
// another shape — whose coordinator is killed (SIGKILL) at a random moment
// of it leaves either no table (the old one for a replace) or the new
// table with all its rows, never an empty, partial or missing one; the
// restarted coordinator drops the staging table the dead one left
// (limits.staging_grace is set short) with every file of it, and the same
// statement then succeeds. Outcomes are counted over several runs of each.
func TestCoordinatorKilledDuringCreate(t *testing.T) {
	bin, dir, env, cargs, c := restartableCluster(t)
	seedTable(t, adbcConn(t, c.addr()), "src", 4000)
	// Each statement makes 200,000 rows: src 50 times over, or an ingest
	// of 40 batches; sum(id) tells the whole.
	const rows = 200000
	var vals []string
	for k := range 50 {
		vals = append(vals, fmt.Sprintf("(%d)", k))
	}
	times := strings.Join(vals, ", ")
	kinds := []struct {
		name string
		// before readies run's table; make runs the statement.
		before func(cnxn adbc.Connection, run int)
		make   func(cnxn adbc.Connection, run int) (int64, error)
		// old is the row count of run's table before the statement, ""
		// when there is none; sum is sum(id) of the made table.
		old, sum string
	}{
		{"ctas", func(adbc.Connection, int) {}, func(cnxn adbc.Connection, run int) (int64, error) {
			return tryUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE made%d AS SELECT id, g, k FROM src, (VALUES %s) v(k)`, run, times))
		}, "", "399900000"},
		{"ingest create", func(adbc.Connection, int) {}, func(cnxn adbc.Connection, run int) (int64, error) {
			return ingestCancel(t, cnxn, fmt.Sprintf("made%d", run), adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 40, 5000))
		}, "", "19999900000"},
		{"ingest replace", func(cnxn adbc.Connection, run int) {
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE made%d (a INTEGER, b VARCHAR)`, run))
			execUpdate(t, cnxn, fmt.Sprintf(`INSERT INTO made%d VALUES (1, 'x'), (2, 'y')`, run))
		}, func(cnxn adbc.Connection, run int) (int64, error) {
			return ingestCancel(t, cnxn, fmt.Sprintf("made%d", run), adbc.OptionValueIngestModeReplace, ingestRows(t, 0, 40, 5000))
		}, "2", "19999900000"},
	}
	// How long each takes once warm, to spread the kills over it.
	took := make([]time.Duration, len(kinds))
	for run := range 2 * len(kinds) {
		k := kinds[run%len(kinds)]
		cnxn := adbcConn(t, c.addr())
		k.before(cnxn, run)
		start := time.Now()
		if n, err := k.make(cnxn, run); err != nil || n != rows {
			t.Fatalf("%s: %d, %v", k.name, n, err)
		}
		took[run%len(kinds)] = time.Since(start)
	}

	const runsEach = 3
	outcome := map[string]int{}
	for run := 2 * len(kinds); run < len(kinds)*(runsEach+2); run++ {
		k, took := kinds[run%len(kinds)], took[run%len(kinds)]
		cnxn := adbcConn(t, c.addr())
		k.before(cnxn, run)
		folders := schemaFolders(t, dir)
		done := make(chan error, 1)
		go func() { _, err := k.make(cnxn, run); done <- err }()
		time.Sleep(time.Duration(rand.Int64N(int64(took) + 1)))
		c.cmd.Process.Kill()
		first := <-done
		c.waitExit(10 * time.Second)
		c = startProc(t, bin, env, cargs...)
		outcome[k.name+": staging table dropped at restart"] += strings.Count(c.log(), "dropped the staging table")
		outcome[k.name+": staging folder without a table removed at restart"] += strings.Count(c.log(), "removed the folder of a create")
		outcome[k.name+": committed staging table renamed at restart"] += strings.Count(c.log(), "renamed the staging table")
		after := adbcConn(t, c.addr())
		got, err := query(t, after, fmt.Sprintf(`SELECT count(*) FROM made%d`, run))
		var ae adbc.Error
		switch {
		case err == nil && got.rows[0] == fmt.Sprint(rows):
			outcome[k.name+": made whole"]++
			wantRows(t, after, fmt.Sprintf(`SELECT sum(id) FROM made%d`, run), k.sum)
		case k.old == "" && errors.As(err, &ae) && ae.Code == adbc.StatusNotFound,
			k.old != "" && err == nil && got.rows[0] == k.old:
			outcome[k.name+": as before"]++
			if n, err := k.make(after, run); err != nil || n != rows {
				t.Fatalf("run %d: the same %s again: %d, %v", run, k.name, n, err)
			}
		default:
			t.Fatalf("run %d (wrong): the table after a %s was killed: %v, %v (first run: %v)", run, k.name, got.rows, err, first)
		}
		if left := rawStaging(t, dir); len(left) > 0 {
			t.Fatalf("run %d: staging tables left after the restart: %v\n%s", run, left, c.log())
		}
		if left := strayStagingFiles(t, dir, folders); len(left) > 0 {
			t.Fatalf("run %d: files of a staging table left after the restart: %v", run, left)
		}
	}
	t.Logf("statements %v; outcomes over %d killed runs of each: %v; wrong: 0", took, runsEach, outcome)
}

// localCatalog is the embedded catalog of a data directory, opened beside
// the processes that use it; the caller closes it.
type localCatalog interface {
	icecat.Catalog
	Close() error
}

// openLocal opens the embedded catalog of dataDir.
func openLocal(t testing.TB, dataDir string) localCatalog {
	t.Helper()
	cat, _, err := catalog.OpenLocal(context.Background(), dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return cat.(localCatalog)
}

// restartableCluster starts a worker and a coordinator as processes of
// the built binary over a fresh data dir, the coordinator with
// limits.staging_grace 1ms so a restart cleans up at once; it returns
// what starts the coordinator again (startProc(t, bin, env, cargs...)).
func restartableCluster(t *testing.T) (bin, dir string, env, cargs []string, c *role) {
	t.Helper()
	bin = icefloeBin(t)
	dir = t.TempDir()
	env = []string{membershipKey}
	cfg := filepath.Join(t.TempDir(), "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("limits:\n  staging_grace: 1ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir)
	cargs = []string{"coordinator", "--config", cfg, "--listen", "127.0.0.1:0", "--data-dir", dir, "--worker", w.field("worker")}
	return bin, dir, env, cargs, startProc(t, bin, env, cargs...)
}

// tableFolder is the local folder of the table name of the embedded
// catalog of dataDir.
func tableFolder(t testing.TB, dataDir, name string) string {
	t.Helper()
	cat := openLocal(t, dataDir)
	defer cat.Close()
	tbl, err := cat.LoadTable(context.Background(), icecat.ToIdentifier(catalog.DefaultSchema, name))
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := catalog.LocalPath(tbl.Location())
	if !ok {
		t.Fatalf("table %s at %s, not a local folder", name, tbl.Location())
	}
	return dir
}

// schemaFolders lists the folders in the default schema's folder of the
// warehouse of dataDir.
func schemaFolders(t testing.TB, dataDir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "warehouse", catalog.DefaultSchema+".db"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()] = true
		}
	}
	return out
}

// strayStagingFiles lists the files a create left in the default schema's
// folder of dataDir's warehouse: those in a folder that was not there
// before (schemaFolders) and is no live table's location. A table a
// create made keeps the folder it was made in; a dropped table's folder
// (a replace drops the old table without purging it) was there before.
func strayStagingFiles(t testing.TB, dataDir string, before map[string]bool) []string {
	t.Helper()
	ctx := context.Background()
	cat := openLocal(t, dataDir)
	defer cat.Close()
	live := map[string]bool{}
	for ident, err := range cat.ListTables(ctx, icecat.ToIdentifier(catalog.DefaultSchema)) {
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if dir, ok := catalog.LocalPath(tbl.Location()); ok {
			live[filepath.Base(dir)] = true
		}
	}
	db := filepath.Join(dataDir, "warehouse", catalog.DefaultSchema+".db")
	var out []string
	for name := range schemaFolders(t, dataDir) {
		if before[name] || live[name] {
			continue
		}
		err := filepath.WalkDir(filepath.Join(db, name), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// announcedCluster starts a coordinator on a fresh data dir and returns
// them with a func that starts a worker announcing itself to it.
func announcedCluster(t *testing.T, coordArgs ...string) (dir string, c *role, worker func() *role) {
	t.Helper()
	bin := icefloeBin(t)
	dir = t.TempDir()
	env := []string{membershipKey}
	c = startProc(t, bin, env, append([]string{"coordinator", "--listen", "127.0.0.1:0", "--data-dir", dir}, coordArgs...)...)
	worker = func() *role {
		return startProc(t, bin, env, "worker", "--listen", "127.0.0.1:0", "--data-dir", dir, "--announce", c.addr())
	}
	return dir, c, worker
}

// rawStaging lists the staging tables in the embedded catalog of dataDir,
// which listings through icefloe leave out.
func rawStaging(t testing.TB, dataDir string) []string {
	t.Helper()
	m := catalog.NewMounts()
	cat, props, err := catalog.OpenLocal(context.Background(), dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Mount(catalog.LocalCatalogName, cat, props); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []string
	for _, st := range m.Staging(context.Background()) {
		out = append(out, st.String())
	}
	return out
}
