package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// TestRestartsKeepEveryTable: after every statement kind — CREATE TABLE,
// INSERT, CREATE TABLE … AS, CREATE OR REPLACE TABLE of the same and of
// another definition, bulk ingest create and replace (same shape and
// another), UPDATE, DELETE, MERGE, compaction — the warehouse's files are
// aged past limits.staging_grace (and two days, past remove_orphan_files'
// minimum) and the coordinator restarts (the built binary, its worker a
// process of its own): every row of every table is still read, through
// SQL and through pyiceberg over the same catalog. Then the crashes: the
// coordinator killed (SIGKILL) at a random moment of a CREATE OR REPLACE
// of each kind leaves the old table or the new one whole, and a staging
// table of an earlier version whose files another table holds (the state
// such a version left when killed between a replace's commit and its drop
// of the staging table) is dropped at the next start without a file that
// table reads.
func TestRestartsKeepEveryTable(t *testing.T) {
	bin, dir, env, cargs, c := restartableCluster(t)
	py := startPyScanner(t, dir)

	// want holds each table's count(*) and sum(id).
	want := map[string]string{}
	// restart stops the coordinator (SIGKILL with kill, else SIGTERM),
	// runs down while it is stopped, ages the files and starts it again.
	restart := func(step string, kill bool, down func()) {
		t.Helper()
		if kill {
			c.cmd.Process.Kill()
		} else {
			c.signal(syscall.SIGTERM)
		}
		c.waitExit(time.Minute)
		if down != nil {
			down()
		}
		ageWarehouse(t, dir, 48*time.Hour)
		c = startProc(t, bin, env, cargs...)
		checkTables(t, step, c, py, want)
	}
	stmt := func(q string) {
		t.Helper()
		execUpdate(t, adbcConn(t, c.addr()), q)
	}
	counts := func(name string) {
		t.Helper()
		want[name] = mustQuery(t, adbcConn(t, c.addr()), "SELECT count(*), sum(id) FROM "+name).rows[0]
	}

	seedTable(t, adbcConn(t, c.addr()), "src", 4000)
	counts("src")
	restart("seeded", false, nil)

	stmt(`CREATE TABLE plain (id BIGINT, g BIGINT)`)
	stmt(`INSERT INTO plain SELECT id, g FROM src`)
	want["plain"] = "4000 | 7998000"
	restart("CREATE TABLE, INSERT … SELECT", false, nil)

	stmt(`INSERT INTO plain VALUES (10000, 1), (10001, 2)`)
	want["plain"] = "4002 | 8018001"
	restart("INSERT … VALUES", false, nil)

	stmt(`CREATE TABLE ctas AS SELECT id, g FROM src WHERE id < 3000`)
	want["ctas"] = "3000 | 4498500"
	restart("CREATE TABLE … AS", false, nil)

	stmt(`CREATE TABLE same AS SELECT id, g FROM src WHERE id < 1000`)
	stmt(`CREATE OR REPLACE TABLE same AS SELECT id, g FROM src WHERE id >= 1000`)
	want["same"] = "3000 | 7498500"
	restart("CREATE OR REPLACE TABLE of the same definition", false, nil)

	stmt(`CREATE TABLE other AS SELECT id, g FROM src`)
	stmt(`CREATE OR REPLACE TABLE other AS SELECT id, 'x' AS s FROM src WHERE id < 500`)
	want["other"] = "500 | 124750"
	restart("CREATE OR REPLACE TABLE of another definition", false, nil)

	cnxn := adbcConn(t, c.addr())
	if _, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 4, 1000)); err != nil {
		t.Fatal(err)
	}
	want["ing"] = "4000 | 7998000"
	restart("ingest create", false, nil)

	cnxn = adbcConn(t, c.addr())
	if _, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeReplace, ingestRows(t, 10000, 2, 1000)); err != nil {
		t.Fatal(err)
	}
	want["ing"] = "2000 | 21999000"
	if _, err := ingest(t, cnxn, "ing2", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 1, 100)); err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "flag", Type: arrow.FixedWidthTypes.Boolean}}, nil)
	if _, err := ingest(t, cnxn, "ing2", adbc.OptionValueIngestModeReplace, rowStream(t, sc, 0, 3, 100, func(b *array.RecordBuilder, _, id int) {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.BooleanBuilder).Append(id%2 == 0)
	})); err != nil {
		t.Fatal(err)
	}
	want["ing2"] = "300 | 44850"
	restart("ingest replace, same shape and another", false, nil)

	stmt(`UPDATE plain SET g = g + 1 WHERE id < 100`)
	restart("UPDATE", false, nil)
	stmt(`DELETE FROM plain WHERE id >= 3000`)
	want["plain"] = "3000 | 4498500"
	restart("DELETE", false, nil)
	stmt(`MERGE INTO plain AS t USING (SELECT id FROM src WHERE id < 10) AS s ON t.id = s.id WHEN MATCHED THEN DELETE`)
	want["plain"] = "2990 | 4498455"
	restart("MERGE", false, nil)

	for range 3 {
		stmt(`INSERT INTO ctas SELECT id + 10000, g FROM src WHERE id < 10`)
	}
	want["ctas"] = "3030 | 4798635"
	mustQuery(t, adbcConn(t, c.addr()), `CALL system.rewrite_data_files(table => 'ctas', options => map('min-input-files', '2'))`)
	restart("compaction", false, nil)

	// The coordinator killed at a random moment of a replace of either
	// kind: the old table or the new, whole. Each run's rows are ids
	// 0..199999 shifted by the run, so the outcomes differ.
	var vals []string
	for k := range 50 {
		vals = append(vals, fmt.Sprintf("(%d)", k))
	}
	big := func(run int) string {
		return fmt.Sprintf(`SELECT id + k * 4000 + %d AS id, g FROM src, (VALUES %s) v(k)`, run*1000000, strings.Join(vals, ", "))
	}
	replace := func(run int) (name, q, result string) {
		result = fmt.Sprintf("200000 | %d", 19999900000+int64(run)*200000*1000000)
		if run%2 == 0 {
			return "same", `CREATE OR REPLACE TABLE same AS ` + big(run), result
		}
		// A column of another name each run: another definition.
		return "other", fmt.Sprintf(`CREATE OR REPLACE TABLE other AS SELECT id, g, 'y' AS s%d FROM (%s)`, run, big(run)), result
	}
	took := map[string]time.Duration{}
	for run := range 2 {
		name, q, result := replace(run)
		start := time.Now()
		stmt(q)
		took[name] = time.Since(start)
		want[name] = result
	}
	outcomes := map[string]int{}
	for run := 2; run < 10; run++ {
		name, q, result := replace(run)
		old := want[name]
		done := make(chan error, 1)
		cn := adbcConn(t, c.addr())
		go func() { _, err := tryUpdate(t, cn, q); done <- err }()
		time.Sleep(time.Duration(rand.Int64N(int64(took[name]) + 1)))
		c.cmd.Process.Kill()
		first := <-done
		c.waitExit(time.Minute)
		ageWarehouse(t, dir, 48*time.Hour)
		c = startProc(t, bin, env, cargs...)
		got := mustQuery(t, adbcConn(t, c.addr()), "SELECT count(*), sum(id) FROM "+name).rows[0]
		switch got {
		case old:
			outcomes[name+": old table"]++
		case result:
			outcomes[name+": new table"]++
		default:
			t.Fatalf("%s after a kill during its replace: %s, want %s or %s (first answer %v)", name, got, old, result, first)
		}
		want[name] = got
		checkTables(t, fmt.Sprintf("killed during the replace of %s (run %d)", name, run), c, py, want)
	}

	// A staging table an earlier version left, whose files legacy holds.
	want["legacy"] = "3 | 6"
	restart("a staging table of an earlier version sharing files with a table", true, func() { legacyState(t, dir) })
	if strings.Contains(c.log(), "left the staging tables") {
		t.Fatalf("the restart left the staging tables:\n%s", c.log())
	}
	if left := rawStaging(t, dir); len(left) > 0 {
		t.Fatalf("staging tables left: %v", left)
	}
	t.Logf("replaces took %v; outcomes of the killed ones: %v", took, outcomes)
}

// checkTables checks that every table of want holds want's count(*) and
// sum(id), read through the coordinator c and through pyiceberg.
func checkTables(t *testing.T, step string, c *role, py *pyScanner, want map[string]string) {
	t.Helper()
	cnxn := adbcConn(t, c.addr())
	for _, name := range slices.Sorted(maps.Keys(want)) {
		res, err := query(t, cnxn, "SELECT count(*), sum(id) FROM "+name)
		if err != nil {
			t.Fatalf("after %s and a restart: %s: %v\n%s", step, name, err, c.log())
		}
		if res.rows[0] != want[name] {
			t.Fatalf("after %s and a restart: %s holds %s, want %s", step, name, res.rows[0], want[name])
		}
		ids, unsupported, err := py.scan(name, nil)
		if err != nil || unsupported != "" {
			t.Fatalf("after %s and a restart: pyiceberg reads %s: %v %s", step, name, err, unsupported)
		}
		var sum int64
		for _, id := range ids {
			sum += id
		}
		if got := fmt.Sprintf("%d | %d", len(ids), sum); got != want[name] {
			t.Fatalf("after %s and a restart: pyiceberg reads %s as %s, want %s", step, name, got, want[name])
		}
	}
}

// ageWarehouse sets the modification time of every file under dataDir's
// warehouse back by age.
func ageWarehouse(t testing.TB, dataDir string, age time.Duration) {
	t.Helper()
	then := time.Now().Add(-age)
	err := filepath.WalkDir(filepath.Join(dataDir, "warehouse"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := os.Chtimes(p, then, then); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// legacyState makes, in dataDir's catalog while no coordinator runs,
// what an earlier version left when killed between a same-definition
// CREATE OR REPLACE's commit and its drop of the staging table: table
// legacy holds the data files of a staging table, which lie in the
// staging table's folder.
func legacyState(t testing.TB, dataDir string) {
	t.Helper()
	ctx := context.Background()
	cat := openLocal(t, dataDir)
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cat.CreateTable(ctx, icecat.ToIdentifier(catalog.DefaultSchema, "legacy"), sc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cat.CreateTable(ctx, icecat.ToIdentifier(catalog.DefaultSchema, catalog.StagingName("legacy")), sc)
	if err != nil {
		t.Fatal(err)
	}
	asc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := st.NewTransaction()
	if err := tx.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	if st, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var files []iceberg.DataFile
	fsys, err := st.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := st.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mans {
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			files = append(files, e.DataFile())
		}
	}
	ttx := tbl.NewTransaction()
	if err := ttx.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
		t.Fatal(err)
	}
	if _, err := ttx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
