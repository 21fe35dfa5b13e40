package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/engine"
)

// tryUpdate runs q as an update and returns its count or error.
func tryUpdate(t testing.TB, cnxn adbc.Connection, q string) (int64, error) {
	t.Helper()
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	return stmt.ExecuteUpdate(context.Background())
}

// wantUpdateError runs q and fails unless it errors with every part in
// its message.
func wantUpdateError(t testing.TB, cnxn adbc.Connection, q string, parts ...string) error {
	t.Helper()
	_, err := tryUpdate(t, cnxn, q)
	if err == nil {
		t.Fatalf("%s: want an error", q)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: error %q does not mention %q", q, err, p)
		}
	}
	return err
}

func wantStatus(t testing.TB, err error, code adbc.Status) {
	t.Helper()
	var ae adbc.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an adbc.Error", err)
	}
	if ae.Code != code {
		t.Fatalf("error %v: code %v, want %v", err, ae.Code, code)
	}
}

func localTable(t testing.TB, s *cluster.Standalone, name string) *table.Table {
	t.Helper()
	p, err := s.Mounts.LoadTable(context.Background(), catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	return p.Table
}

// dataFiles lists every file under the table's data folder.
func dataFiles(t testing.TB, tbl *table.Table) []string {
	t.Helper()
	loc := tbl.Location()
	if u, err := url.Parse(loc); err == nil && u.Scheme == "file" {
		loc = u.Path
	}
	var out []string
	err := filepath.WalkDir(filepath.Join(loc, "data"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func snapshotCount(t testing.TB, tbl *table.Table) int { return len(tbl.Metadata().Snapshots()) }

func wantRows(t testing.TB, cnxn adbc.Connection, q string, want ...string) {
	t.Helper()
	got := mustQuery(t, cnxn, q).sorted()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", q, got, want)
	}
}

func TestInsertSelect(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE o2 (id BIGINT NOT NULL, status VARCHAR, amount DECIMAL(12,2), ordered_at TIMESTAMPTZ)
		PARTITIONED BY (day(ordered_at))`)
	n := execUpdate(t, cnxn, `INSERT INTO o2 SELECT id, status, amount, ordered_at FROM orders`)
	total := mustQuery(t, cnxn, `SELECT count(*) FROM orders`).rows[0]
	if fmt.Sprint(n) != total {
		t.Fatalf("INSERT … SELECT counted %d, orders has %s rows", n, total)
	}
	tbl := localTable(t, s, "o2")
	if got := snapshotCount(t, tbl); got != 1 {
		t.Fatalf("one statement made %d snapshots", got)
	}
	// Same rows as the source, and each file's partition is its rows' day.
	want := reference(t, s, `SELECT id, status, amount, ordered_at FROM orders`, "orders").sorted()
	got := mustQuery(t, cnxn, `SELECT id, status, amount, ordered_at FROM o2`).sorted()
	if !slices.Equal(got, want) {
		t.Fatalf("o2 differs from orders: %d vs %d rows", len(got), len(want))
	}
	wantRows(t, cnxn, `SELECT count(*) FROM o2 WHERE id IS NULL`, "0")
	checkPartitionDays(t, s, "o2")

	// Column lists in any order; omitted nullable columns are NULL; the
	// query may reorder and project.
	execUpdate(t, cnxn, `CREATE TABLE small (a INTEGER NOT NULL, b VARCHAR, c DOUBLE) PARTITIONED BY (b)`)
	if n := execUpdate(t, cnxn, `INSERT INTO small (c, a) SELECT value, CAST(id AS INTEGER) FROM events WHERE id <= 3`); n != 3 {
		t.Fatalf("count %d", n)
	}
	if n := execUpdate(t, cnxn, `INSERT INTO small (b, a) SELECT kind, 100 + CAST(id AS INTEGER) FROM events WHERE id <= 2`); n != 2 {
		t.Fatalf("count %d", n)
	}
	ref := reference(t, s, `SELECT CAST(id AS INTEGER) AS a, NULL AS b, value AS c FROM events WHERE id <= 3
		UNION ALL SELECT 100 + CAST(id AS INTEGER), kind, NULL FROM events WHERE id <= 2`, "events").sorted()
	wantRows(t, cnxn, `SELECT a, b, c FROM small`, ref...)
	// Partition values come from b even though the query named it first.
	checkIdentity(t, s, "small", "b")

	// INSERT … VALUES still works, and INSERT … SELECT of a VALUES list.
	if n := execUpdate(t, cnxn, `INSERT INTO small VALUES (7, 'x', 1.5)`); n != 1 {
		t.Fatalf("count %d", n)
	}
	if n := execUpdate(t, cnxn, `INSERT INTO small SELECT * FROM small WHERE a = 7`); n != 1 {
		t.Fatalf("count %d", n)
	}
	wantRows(t, cnxn, `SELECT count(*) FROM small WHERE a = 7`, "2")
	// An empty SELECT adds nothing and makes no snapshot.
	before := snapshotCount(t, localTable(t, s, "small"))
	if n := execUpdate(t, cnxn, `INSERT INTO small SELECT * FROM small WHERE a < 0`); n != 0 {
		t.Fatalf("count %d", n)
	}
	if got := snapshotCount(t, localTable(t, s, "small")); got != before {
		t.Fatalf("empty insert made a snapshot")
	}
}

// checkPartitionDays checks that every data file of the table holds rows
// of the day its partition value names.
func checkPartitionDays(t *testing.T, s *cluster.Standalone, name string) {
	t.Helper()
	tbl := localTable(t, s, name)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("no files")
	}
	for _, task := range tasks {
		lower, upper := task.File.LowerBoundValues(), task.File.UpperBoundValues()
		part := task.File.Partition()
		var day any
		for _, v := range part {
			day = v
		}
		lo, hi := lower[4], upper[4]
		if len(lo) != 8 || len(hi) != 8 {
			t.Fatalf("file %s has no ordered_at bounds", task.File.FilePath())
		}
		loDay := int64(leInt64(lo)) / 86_400_000_000
		hiDay := int64(leInt64(hi)) / 86_400_000_000
		if fmt.Sprint(loDay) != fmt.Sprint(day) || fmt.Sprint(hiDay) != fmt.Sprint(day) {
			t.Fatalf("file %s: partition day %v holds days %d…%d", task.File.FilePath(), day, loDay, hiDay)
		}
	}
}

func leInt64(b []byte) int64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return int64(v)
}

// checkIdentity checks that every file of an identity-partitioned table
// holds only the value of its partition in column col.
func checkIdentity(t *testing.T, s *cluster.Standalone, name, col string) {
	t.Helper()
	tbl := localTable(t, s, name)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	field, _ := tbl.Schema().FindFieldByName(col)
	for _, task := range tasks {
		var pv any
		for _, v := range task.File.Partition() {
			pv = v
		}
		lo, hi := task.File.LowerBoundValues()[field.ID], task.File.UpperBoundValues()[field.ID]
		if pv == nil {
			if task.File.NullValueCounts()[field.ID] != task.File.Count() {
				t.Fatalf("file %s in the NULL partition has non-NULL %s", task.File.FilePath(), col)
			}
			continue
		}
		if string(lo) != fmt.Sprint(pv) || string(hi) != fmt.Sprint(pv) {
			t.Fatalf("file %s: partition %#v (%T) holds %s %q…%q", task.File.FilePath(), task.File.Partition(), pv, col, lo, hi)
		}
	}
}

func TestCreateTableAsSelect(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	n := execUpdate(t, cnxn, `CREATE TABLE paid PARTITIONED BY (status) WITH ('write.target-file-size-bytes' = '1048576')
		AS SELECT id, status, amount FROM orders WHERE amount > 500`)
	want := reference(t, s, `SELECT id, status, amount FROM orders WHERE amount > 500`, "orders").sorted()
	if int(n) != len(want) {
		t.Fatalf("CTAS counted %d, want %d", n, len(want))
	}
	wantRows(t, cnxn, `SELECT id, status, amount FROM paid`, want...)
	tbl := localTable(t, s, "paid")
	if got := tbl.Properties()["write.target-file-size-bytes"]; got != "1048576" {
		t.Fatalf("property %q", got)
	}
	if spec := tbl.Spec(); spec.NumFields() != 1 {
		t.Fatalf("spec %v", tbl.Spec())
	}
	checkIdentity(t, s, "paid", "status")
	wantUpdateError(t, cnxn, `CREATE TABLE paid AS SELECT 1 AS x`, "already exists")
	if n := execUpdate(t, cnxn, `CREATE TABLE IF NOT EXISTS paid AS SELECT 1 AS x`); n != 0 {
		t.Fatalf("count %d", n)
	}
	// A failing CTAS leaves no table behind.
	wantUpdateError(t, cnxn, `CREATE TABLE bad AS SELECT CAST(status || 'x' AS INTEGER) AS x FROM orders`)
	if _, err := s.Mounts.LoadTable(context.Background(), catalog.TableRef{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema, Table: "bad"}); err == nil {
		t.Fatal("failed CTAS left its table")
	}
}

func TestWriteConstraints(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE nn (id BIGINT NOT NULL, status VARCHAR NOT NULL)`)
	// orders.status is nullable and holds NULLs: the statement fails,
	// names the column and commits nothing.
	err := wantUpdateError(t, cnxn, `INSERT INTO nn SELECT id, status FROM orders`, "status", "NULL")
	wantStatus(t, err, adbc.StatusInvalidArgument)
	tbl := localTable(t, s, "nn")
	if snapshotCount(t, tbl) != 0 {
		t.Fatal("a failed insert committed")
	}
	if files := dataFiles(t, tbl); len(files) != 0 {
		t.Fatalf("a failed insert left files: %v", files)
	}
	// A nullable source with no NULL in it is accepted.
	n := execUpdate(t, cnxn, `INSERT INTO nn SELECT id, status FROM orders WHERE status IS NOT NULL`)
	wantRows(t, cnxn, `SELECT count(*) FROM nn`, fmt.Sprint(n))
	// An omitted NOT NULL column is refused at plan time.
	wantUpdateError(t, cnxn, `INSERT INTO nn (id) SELECT id FROM orders`, "status", "NOT NULL")
	// Types that do not cast implicitly are refused at plan time, naming
	// the column.
	err = wantUpdateError(t, cnxn, `INSERT INTO nn SELECT status, status FROM orders`, `"id"`, "implicitly")
	wantStatus(t, err, adbc.StatusInvalidArgument)
	wantUpdateError(t, cnxn, `INSERT INTO nn SELECT id FROM orders`, "2 columns", "returns 1")
	wantUpdateError(t, cnxn, `INSERT INTO nn (id, nope) SELECT id, status FROM orders`, "nope")
	wantUpdateError(t, cnxn, `INSERT INTO missing SELECT 1`, "missing")
	if got := snapshotCount(t, localTable(t, s, "nn")); got != 1 {
		t.Fatalf("%d snapshots after one good insert", got)
	}
}

// TestConcurrentInserts: 8 clients × 25 INSERTs into one table at once;
// every row lands exactly once and each statement made one snapshot.
func TestConcurrentInserts(t *testing.T) {
	s := StartCluster(t, Workers(2))
	setup := adbcConn(t, s.Addr())
	execUpdate(t, setup, `CREATE TABLE hits (client INTEGER NOT NULL, n INTEGER NOT NULL, k BIGINT)`)
	const clients, inserts = 8, 25
	runInserts(t, s, clients, inserts, func(c, i int) string {
		if i%2 == 0 {
			return fmt.Sprintf(`INSERT INTO hits VALUES (%d, %d, %d)`, c, i, c*1000+i)
		}
		return fmt.Sprintf(`INSERT INTO hits SELECT %d, %d, CAST(%d AS BIGINT)`, c, i, c*1000+i)
	}, 1)
	wantRows(t, setup, `SELECT count(*), count(DISTINCT (client, n)), sum(k) FROM hits`,
		fmt.Sprintf("%d | %d | %d", clients*inserts, clients*inserts, func() (s int) {
			for c := range clients {
				for i := range inserts {
					s += c*1000 + i
				}
			}
			return
		}()))
	if got := snapshotCount(t, localTable(t, s, "hits")); got != clients*inserts {
		t.Fatalf("%d snapshots, want %d", got, clients*inserts)
	}
	// A commit that lost its race deletes the metadata file it wrote: the
	// table has one metadata file per commit, as one written alone does.
	execUpdate(t, setup, `CREATE TABLE alone (client INTEGER NOT NULL, n INTEGER NOT NULL, k BIGINT)`)
	execUpdate(t, setup, `INSERT INTO alone VALUES (1, 1, 1)`)
	extra := func(name string) int {
		tbl := localTable(t, s, name)
		return metadataFiles(t, tbl) - snapshotCount(t, tbl)
	}
	if got, want := extra("hits"), extra("alone"); got != want {
		t.Fatalf("%d metadata files more than snapshots after the concurrent inserts, %d for a table written alone: lost commits left theirs", got, want)
	}
}

// metadataFiles counts the table metadata files in tbl's metadata folder.
func metadataFiles(t testing.TB, tbl *table.Table) int {
	t.Helper()
	p, ok := catalog.LocalPath(tbl.MetadataLocation())
	if !ok {
		t.Fatalf("metadata %s is not local", tbl.MetadataLocation())
	}
	names, err := filepath.Glob(filepath.Join(filepath.Dir(p), "*.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// runInserts runs, from clients connections at once, inserts statements
// each (stmt(client, i)) and fails the test on any error or, with count ≥ 0,
// an update count other than count.
func runInserts(t *testing.T, s *cluster.Standalone, clients, inserts int, stmt func(c, i int) string, count int64) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, clients*inserts)
	for c := range clients {
		cnxn := adbcConn(t, s.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range inserts {
				q := stmt(c, i)
				n, err := tryUpdate(t, cnxn, q)
				if err == nil && count >= 0 && n != count {
					err = fmt.Errorf("counted %d", n)
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", q, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDeleteUpdate runs DELETE and UPDATE on copies of the demo tables and
// compares every result with single-node DuckDB applying the same
// statements to the same rows.
func TestDeleteUpdate(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE o PARTITIONED BY (day(ordered_at)) AS SELECT * FROM orders`)
	execUpdate(t, cnxn, `CREATE TABLE e PARTITIONED BY (bucket(8, id)) AS SELECT * FROM events`)
	before := dataFiles(t, localTable(t, s, "o"))

	steps := []struct {
		table, stmt, check string
	}{
		{"o", `DELETE FROM o WHERE status = 'cancelled'`, `SELECT status, count(*) FROM o GROUP BY status`},
		{"o", `UPDATE o SET amount = amount * 2, status = upper(status) WHERE customer_id % 7 = 0`, `SELECT status, count(*), sum(amount) FROM o GROUP BY status`},
		{"o", `DELETE FROM o WHERE ordered_at < TIMESTAMPTZ '2024-01-05 00:00:00+00'`, `SELECT min(ordered_at), count(*) FROM o`},
		{"o", `UPDATE o SET status = 'none' WHERE status IS NULL`, `SELECT status, count(*) FROM o GROUP BY status`},
		{"e", `DELETE FROM e WHERE value > 50 OR kind = 'click'`, `SELECT kind, count(*), round(sum(value), 3) FROM e GROUP BY kind`},
		{"e", `UPDATE e SET value = -value`, `SELECT count(*), round(sum(value), 3) FROM e`},
		{"e", `DELETE FROM e WHERE id % 2 = 0`, `SELECT count(*), sum(id) FROM e`},
	}
	// The reference applies each statement to its own DuckDB copy.
	ctx := context.Background()
	refs := map[string]*refTable{"o": newRefTable(t, s, "o"), "e": newRefTable(t, s, "e")}
	for _, st := range steps {
		wantN := refs[st.table].exec(t, st.stmt)
		snaps := snapshotCount(t, localTable(t, s, st.table))
		n := execUpdate(t, cnxn, st.stmt)
		if n != wantN {
			t.Fatalf("%s: count %d, DuckDB %d", st.stmt, n, wantN)
		}
		if got := snapshotCount(t, localTable(t, s, st.table)); n > 0 && got != snaps+1 {
			t.Fatalf("%s: %d snapshots after %d", st.stmt, got, snaps)
		}
		want := refs[st.table].query(t, st.check)
		got := mustQuery(t, cnxn, st.check).sorted()
		if !slices.Equal(got, want) {
			t.Fatalf("after %s\n%s:\n got %q\nwant %q", st.stmt, st.check, got, want)
		}
		// Every row, not just the aggregate.
		all := "SELECT * FROM " + st.table
		if got, want := mustQuery(t, cnxn, all).sorted(), refs[st.table].query(t, all); !slices.Equal(got, want) {
			t.Fatalf("after %s: rows differ (%d vs %d)", st.stmt, len(got), len(want))
		}
	}
	_ = ctx
	// A DELETE matching nothing commits nothing.
	snaps := snapshotCount(t, localTable(t, s, "o"))
	if n := execUpdate(t, cnxn, `DELETE FROM o WHERE id < 0`); n != 0 {
		t.Fatalf("count %d", n)
	}
	if snapshotCount(t, localTable(t, s, "o")) != snaps {
		t.Fatal("empty delete made a snapshot")
	}
	// Whole-partition deletes drop files without rewriting any.
	files := len(dataFiles(t, localTable(t, s, "o")))
	execUpdate(t, cnxn, `DELETE FROM o WHERE ordered_at >= TIMESTAMPTZ '2024-01-20 00:00:00+00'`)
	if after := len(dataFiles(t, localTable(t, s, "o"))); after != files {
		t.Fatalf("a whole-partition delete wrote files: %d → %d", files, after)
	}
	// UPDATE into a NOT NULL column fails, naming it; nothing changes.
	execUpdate(t, cnxn, `CREATE TABLE nn (id BIGINT NOT NULL, v INTEGER)`)
	execUpdate(t, cnxn, `INSERT INTO nn VALUES (1, 1), (2, 2)`)
	err := wantUpdateError(t, cnxn, `UPDATE nn SET id = NULL WHERE v = 1`, "id", "NULL")
	wantStatus(t, err, adbc.StatusInvalidArgument)
	wantRows(t, cnxn, `SELECT id, v FROM nn`, "1 | 1", "2 | 2")
	if files := dataFiles(t, localTable(t, s, "nn")); len(files) != 1 {
		t.Fatalf("a failed UPDATE left files: %v", files)
	}
	// DELETE everything.
	total := mustQuery(t, cnxn, `SELECT count(*) FROM e`).rows[0]
	if n := execUpdate(t, cnxn, `DELETE FROM e`); fmt.Sprint(n) != total {
		t.Fatalf("DELETE FROM e counted %d of %s", n, total)
	}
	wantRows(t, cnxn, `SELECT count(*) FROM e`, "0")
	_ = before
}

// refTable is a DuckDB copy of a table for the differential checks.
type refTable struct {
	res  func(t testing.TB, q string) []string
	exec func(t testing.TB, q string) int64
}

func newRefTable(t testing.TB, s *cluster.Standalone, tables ...string) *refTable {
	t.Helper()
	conn := writeRefConn(t, s, tables...)
	return &refTable{
		res: func(t testing.TB, q string) []string {
			rdr, err := conn.Query(context.Background(), q, engine.QueryOptions{})
			if err != nil {
				t.Fatalf("reference %s: %v", q, err)
			}
			return collect(t, rdr).sorted()
		},
		exec: func(t testing.TB, q string) int64 {
			r, err := conn.DB().ExecContext(context.Background(), q)
			if err != nil {
				t.Fatalf("reference %s: %v", q, err)
			}
			n, _ := r.RowsAffected()
			return n
		},
	}
}

// writeRefConn is a DuckDB connection holding a copy of each named table
// (current snapshot, read with iceberg-go), closed when the test ends.
func writeRefConn(t testing.TB, s *cluster.Standalone, tables ...string) *engine.Conn {
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
		tbl := localTable(t, s, name)
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := array.NewTableReader(at, 0)
		err = conn.LoadTable(ctx, name, rdr)
		rdr.Release()
		at.Release()
		if err != nil {
			t.Fatalf("reference load %s: %v", name, err)
		}
	}
	return conn
}

func (r *refTable) query(t testing.TB, q string) []string { return r.res(t, q) }

// TestAlterThenRead evolves a table's schema and partition spec between
// writes and compares reads with DuckDB.
func TestAlterThenRead(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE c AS SELECT id, name, country, signup FROM customers`)
	ref := newRefTable(t, s, "c", "customers")
	for _, st := range []struct{ ours, duck string }{
		{`ALTER TABLE c ADD COLUMN score DOUBLE`, `ALTER TABLE c ADD COLUMN score DOUBLE`},
		{`UPDATE c SET score = id * 1.5 WHERE country = 'DE'`, ``},
		{`ALTER TABLE c RENAME COLUMN name TO full_name`, `ALTER TABLE c RENAME COLUMN name TO full_name`},
		{`ALTER TABLE c ADD PARTITION FIELD country`, ``},
		{`INSERT INTO c SELECT id + 1000, name, country, signup, 0.5 FROM customers WHERE id <= 50`, ``},
		{`ALTER TABLE c DROP COLUMN signup`, `ALTER TABLE c DROP COLUMN signup`},
		{`DELETE FROM c WHERE id % 3 = 0`, ``},
		{`ALTER TABLE c ALTER COLUMN id TYPE BIGINT`, ``},
	} {
		execUpdate(t, cnxn, st.ours)
		duck := st.duck
		if duck == "" && !strings.HasPrefix(st.ours, "ALTER") {
			duck = st.ours
		}
		if duck != "" {
			ref.exec(t, duck)
		}
		for _, q := range []string{`SELECT * FROM c`, `SELECT country, count(*), sum(score) FROM c GROUP BY country`} {
			got, want := mustQuery(t, cnxn, q).sorted(), ref.query(t, q)
			if !slices.Equal(got, want) {
				t.Fatalf("after %s\n%s: got %d rows, want %d\n%q\n%q", st.ours, q, len(got), len(want), head(got), head(want))
			}
		}
	}
	if spec := localTable(t, s, "c").Spec(); spec.NumFields() != 1 {
		t.Fatalf("spec %v", spec)
	}
}

func head(rows []string) []string { return rows[:min(len(rows), 5)] }

// TestWorkerKilledMidWrite closes the workers while a large INSERT …
// SELECT is writing: the statement fails, the table has no new snapshot
// and no file of the statement is left in the warehouse.
func TestWorkerKilledMidWrite(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE big (id BIGINT, status VARCHAR, pad VARCHAR) WITH ('write.target-file-size-bytes' = '262144')`)
	execUpdate(t, cnxn, `INSERT INTO big VALUES (1, 'kept', 'x')`)
	tbl := localTable(t, s, "big")
	before := dataFiles(t, tbl)
	snaps := snapshotCount(t, tbl)

	done := make(chan error, 1)
	go func() {
		_, err := tryUpdate(t, cnxn, `INSERT INTO big SELECT o.id * 1000 + c.id, o.status, md5(CAST(o.id + c.id AS VARCHAR))
			FROM orders o, (SELECT id FROM customers WHERE id <= 20) c`)
		done <- err
	}()
	// Wait until the statement has written its first file, then take the
	// workers away.
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("the INSERT ended before a worker was closed (err %v): make it bigger", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the INSERT wrote no file in 90 s")
		}
		if len(dataFiles(t, tbl)) > len(before) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, w := range s.Workers {
		if err := w.Close(); err != nil {
			t.Logf("close worker: %v", err)
		}
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the INSERT did not end after its workers were closed")
	}
	if err == nil {
		t.Fatal("the INSERT succeeded with its workers closed")
	}
	t.Logf("statement failed as it should: %v", err)
	after := localTable(t, s, "big")
	if got := snapshotCount(t, after); got != snaps {
		t.Fatalf("%d snapshots after the failed insert, want %d", got, snaps)
	}
	if files := dataFiles(t, after); !slices.Equal(files, before) {
		t.Fatalf("files left behind:\n%v\nwant\n%v", files, before)
	}
}

// ingest runs one ADBC bulk ingest of rdr into name with mode.
func ingest(t testing.TB, cnxn adbc.Connection, name, mode string, rdr array.RecordReader, extra ...string) (int64, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	opts := map[string]string{adbc.OptionKeyIngestTargetTable: name, adbc.OptionKeyIngestMode: mode}
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	for k, v := range opts {
		if err := stmt.SetOption(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.BindStream(context.Background(), rdr); err != nil {
		t.Fatal(err)
	}
	return stmt.ExecuteUpdate(context.Background())
}

// ingestRows is a stream of batches of n rows each: id, name (NULL
// every 7th row), score.
func ingestRows(t testing.TB, start, batches, n int) array.RecordReader {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	return rowStream(t, sc, start, batches, n, func(bld *array.RecordBuilder, b, id int) {
		bld.Field(0).(*array.Int64Builder).Append(int64(id))
		if id%7 == 0 {
			bld.Field(1).AppendNull()
		} else {
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
		}
		bld.Field(2).(*array.Float64Builder).Append(float64(id) / 4)
	})
}

// rowStream is a stream of batches of n rows of schema sc, row by row
// appended by row(builder, batch, id) with ids from start on.
func rowStream(t testing.TB, sc *arrow.Schema, start, batches, n int, row func(bld *array.RecordBuilder, b, id int)) array.RecordReader {
	t.Helper()
	var recs []arrow.RecordBatch
	for b := range batches {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := range n {
			row(bld, b, start+b*n+i)
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	rdr, err := array.NewRecordReader(sc, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	return rdr
}

func TestBulkIngest(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	// create: a new table from the stream's schema.
	n, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 4, 2500))
	if err != nil || n != 10_000 {
		t.Fatalf("create: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT count(*), count(name), sum(id), sum(score) FROM ing`, "10000 | 8571 | 49995000 | 12498750")
	if got := snapshotCount(t, localTable(t, s, "ing")); got != 1 {
		t.Fatalf("%d snapshots", got)
	}
	// The batches went round-robin to both workers' writers: file names
	// carry the fragment index in the write UUID's last group.
	shares := map[string]bool{}
	for _, f := range dataFiles(t, localTable(t, s, "ing")) {
		base := filepath.Base(f)
		for _, idx := range []string{"-000000000000-", "-000001000000-", "-100000000000-"} {
			if strings.Contains(base, idx) {
				shares[idx] = true
			}
		}
	}
	if !shares["-000000000000-"] || !shares["-000001000000-"] || shares["-100000000000-"] {
		t.Fatalf("ingest did not flow through both workers: %v", shares)
	}
	// create again fails: the table exists.
	if _, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 1, 10)); err == nil {
		t.Fatal("create into an existing table succeeded")
	}
	// append: into the existing table; one more snapshot.
	if n, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeAppend, ingestRows(t, 10_000, 2, 500)); err != nil || n != 1000 {
		t.Fatalf("append: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT count(*), count(DISTINCT id) FROM ing`, "11000 | 11000")
	if got := snapshotCount(t, localTable(t, s, "ing")); got != 2 {
		t.Fatalf("%d snapshots", got)
	}
	// append to a missing table fails.
	if _, err := ingest(t, cnxn, "nope", adbc.OptionValueIngestModeAppend, ingestRows(t, 0, 1, 10)); err == nil {
		t.Fatal("append to a missing table succeeded")
	}
	// create_append: creates, then appends.
	for i := range 2 {
		if n, err := ingest(t, cnxn, "ca", adbc.OptionValueIngestModeCreateAppend, ingestRows(t, i*100, 1, 100)); err != nil || n != 100 {
			t.Fatalf("create_append %d: %d, %v", i, n, err)
		}
	}
	wantRows(t, cnxn, `SELECT count(*), min(id), max(id) FROM ca`, "200 | 0 | 199")
	// replace: the table holds only the new rows.
	if n, err := ingest(t, cnxn, "ing", adbc.OptionValueIngestModeReplace, ingestRows(t, 5, 1, 3)); err != nil || n != 3 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT id, name, score FROM ing`, "5 | n5 | 1.25", "6 | n6 | 1.5", "7 | NULL | 1.75")
	// replace of a missing table creates it.
	if n, err := ingest(t, cnxn, "fresh", adbc.OptionValueIngestModeReplace, ingestRows(t, 0, 1, 5)); err != nil || n != 5 {
		t.Fatalf("replace missing: %d, %v", n, err)
	}
	// temporary=true is refused with a clear error.
	_, err = ingest(t, cnxn, "tmp", adbc.OptionValueIngestModeCreate, ingestRows(t, 0, 1, 5), adbc.OptionValueIngestTemporary, adbc.OptionValueEnabled)
	if err == nil || !strings.Contains(err.Error(), "temporary") {
		t.Fatalf("temporary ingest: %v", err)
	}
	// A NULL into a NOT NULL column fails, names it and commits nothing.
	execUpdate(t, cnxn, `CREATE TABLE strict (id BIGINT NOT NULL, name VARCHAR NOT NULL, score DOUBLE)`)
	_, err = ingest(t, cnxn, "strict", adbc.OptionValueIngestModeAppend, ingestRows(t, 0, 3, 100))
	if err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("NULL into NOT NULL: %v", err)
	}
	strict := localTable(t, s, "strict")
	if snapshotCount(t, strict) != 0 || len(dataFiles(t, strict)) != 0 {
		t.Fatalf("a failed ingest left a snapshot or files: %v", dataFiles(t, strict))
	}
	// Types convert by name: an int32 stream into the BIGINT column.
	sc := arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int32}, {Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	bld.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	bld.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	rec := bld.NewRecordBatch()
	bld.Release()
	rdr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	rec.Release()
	if n, err := ingest(t, cnxn, "strict", adbc.OptionValueIngestModeAppend, rdr); err != nil || n != 2 {
		t.Fatalf("int32 ingest: %d, %v", n, err)
	}
	wantRows(t, cnxn, `SELECT id, name, score FROM strict`, "1 | a | NULL", "2 | b | NULL")
}

// TestDeleteMergeOnRead: on a table with write.delete.mode=merge-on-read a
// DELETE whose WHERE converts to an Iceberg filter writes positional
// deletes (v2) or deletion vectors (v3) instead of rewriting files; other
// predicates fall back to copy-on-write. Reads match DuckDB.
func TestDeleteMergeOnRead(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, v := range []string{"2", "3"} {
		name := "mor" + v
		execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s (id BIGINT, name VARCHAR, score DOUBLE) PARTITIONED BY (bucket(4, id))
			WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read')`, name, v))
		if n, err := ingest(t, cnxn, name, adbc.OptionValueIngestModeAppend, ingestRows(t, 0, 4, 2500)); err != nil || n != 10_000 {
			t.Fatalf("ingest into v%s: %d, %v", v, n, err)
		}
		if got := localTable(t, s, name).Metadata().Version(); fmt.Sprint(got) != v {
			t.Fatalf("format version %d", got)
		}
		ref := newRefTable(t, s, name)
		for _, stmt := range []string{
			`DELETE FROM ` + name + ` WHERE id < 3000`,
			`DELETE FROM ` + name + ` WHERE id >= 9000 AND id < 9500`,
			`DELETE FROM ` + name + ` WHERE id % 5 = 0`, // no Iceberg form: copy-on-write
		} {
			want := ref.exec(t, stmt)
			if n := execUpdate(t, cnxn, stmt); n != want {
				t.Fatalf("%s: count %d, DuckDB %d", stmt, n, want)
			}
			all := "SELECT * FROM " + name
			if got, want := mustQuery(t, cnxn, all).sorted(), ref.query(t, all); !slices.Equal(got, want) {
				t.Fatalf("v%s after %s: %d rows, DuckDB %d", v, stmt, len(got), len(want))
			}
			if strings.Contains(stmt, "id < 3000") {
				tasks, err := localTable(t, s, name).Scan().PlanFiles(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				deletes := 0
				for _, task := range tasks {
					deletes += len(task.DeleteFiles) + len(task.DeletionVectorFiles)
				}
				if deletes == 0 {
					t.Fatalf("v%s: merge-on-read DELETE wrote no delete files", v)
				}
			}
		}
	}
}

// TestWriteUpdateCounts: every path that runs an INSERT … SELECT returns
// its count and runs it exactly once — plain update, prepared update, and
// the prepared-statement query path Python ADBC's cursor.execute takes.
func TestWriteUpdateCounts(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE uc (id BIGINT)`)
	q := `INSERT INTO uc SELECT id FROM customers WHERE id <= 10`
	if n := execUpdate(t, cnxn, q); n != 10 {
		t.Fatalf("update: %d", n)
	}
	stmt := newStatement(t, cnxn, q)
	defer stmt.Close()
	if err := stmt.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := stmt.ExecuteUpdate(context.Background()); err != nil || n != 10 {
		t.Fatalf("prepared update: %d, %v", n, err)
	}
	rdr, n, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("prepared query path: %v", err)
	}
	for rdr.Next() {
	}
	rdr.Release()
	if n != 10 {
		t.Fatalf("prepared query path counted %d", n)
	}
	wantRows(t, cnxn, `SELECT count(*), count(DISTINCT id) FROM uc`, "30 | 10")
	if got := snapshotCount(t, localTable(t, s, "uc")); got != 3 {
		t.Fatalf("%d snapshots for three statements", got)
	}
}

// TestConflictingRewrites: UPDATEs that rewrite the same files at once
// must not both land — the loser fails with ABORTED naming the conflict,
// and no row is lost or duplicated.
func TestConflictingRewrites(t *testing.T) {
	s := StartCluster(t, Workers(2))
	setup := adbcConn(t, s.Addr())
	execUpdate(t, setup, `CREATE TABLE cf (id BIGINT, v BIGINT)`)
	execUpdate(t, setup, `INSERT INTO cf VALUES (1, 0), (2, 0), (3, 0), (4, 0)`)
	const clients = 4
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for c := range clients {
		cnxn := adbcConn(t, s.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[c] = tryUpdate(t, cnxn, `UPDATE cf SET v = v + 1`)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case strings.Contains(err.Error(), "conflict"):
			wantStatus(t, err, adbc.StatusUnknown) // ADBC reports ABORTED as Unknown
			if !strings.Contains(err.Error(), "Aborted") {
				t.Fatalf("conflict without ABORTED: %v", err)
			}
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok == 0 {
		t.Fatal("no UPDATE succeeded")
	}
	wantRows(t, setup, `SELECT count(*), count(DISTINCT id), min(v) = max(v), max(v) FROM cf`, fmt.Sprintf("4 | 4 | true | %d", ok))
	// The losers' files are gone: the initial file plus one per UPDATE
	// that committed (each rewrites the table's one file).
	if files := dataFiles(t, localTable(t, s, "cf")); len(files) != 1+ok {
		t.Fatalf("%d files after %d committed UPDATEs: %v", len(files), ok, files)
	}
}

// TestDifferentialAfterWrites runs the differential corpus (2 workers)
// on the harness's tables after DELETE, UPDATE, ALTER TABLE and INSERT …
// SELECT changed them, against single-node DuckDB over the new snapshots.
func TestDifferentialAfterWrites(t *testing.T) {
	cases := loadCorpus(t, corpusDir)
	env := startDiffEnv(t, []int{2}, []bool{false})
	cfg := env.configs[0]
	for _, q := range []string{
		`DELETE FROM orders WHERE o_orderstatus = 'P'`,
		`UPDATE orders SET o_totalprice = o_totalprice + 1, o_comment = upper(o_comment) WHERE o_custkey % 3 = 0`,
		`ALTER TABLE orders ADD PARTITION FIELD bucket(4, o_custkey)`,
		`INSERT INTO orders SELECT o_orderkey + 100000000, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_ts,
			o_orderpriority, o_clerk, o_comment FROM orders WHERE o_orderkey % 10 = 1`,
		`DELETE FROM events WHERE e_kind = 'click' OR e_value > 10000`,
		`UPDATE events SET e_flag = NOT e_flag WHERE e_user < 100`,
		`UPDATE lineitem SET l_tax = l_tax * 2 WHERE l_linenumber = 1`,
		`DELETE FROM lineitem WHERE l_returnflag = 'R'`,
		`ALTER TABLE customer ADD COLUMN c_note VARCHAR`,
		`UPDATE customer SET c_note = c_name WHERE c_custkey < 50`,
		`ALTER TABLE part ALTER COLUMN p_size TYPE BIGINT`,
		// Prunes on the widened column: files written before have 4-byte
		// bounds that iceberg-go cannot read as long.
		`DELETE FROM part WHERE p_size IN (1, 2)`,
		`UPDATE part SET p_size = p_size + 1000 WHERE p_size = 3`,
		`INSERT INTO strs SELECT id + 100000, s, grp, amount FROM strs WHERE grp = 1`,
		`DELETE FROM strs WHERE id % 5 = 0`,
	} {
		if _, err := tryUpdate(t, cfg.cnxn, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ref := referenceConn(t, env.s.Mounts, diffTableNames())
	failed := 0
	for _, c := range cases {
		want, werr := runReference(ref, c.sql)
		if d := cfg.check(c.sql, c.ordered, want, werr); d != "" {
			failed++
			t.Errorf("after writes, %s (%s):\n%s\n%s", c.name, c.pos, c.sql, d)
		}
	}
	t.Logf("%d corpus queries after writes, %d mismatches", len(cases), failed)
}
