package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestMergeTruncateDifferential runs MERGE and TRUNCATE on a partitioned
// table with delete files and on the same rows in single-node DuckDB, and
// compares counts and every row after each statement.
func TestMergeTruncateDifferential(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE mt (k BIGINT, v VARCHAR, n BIGINT) PARTITIONED BY (bucket(4, k))
		WITH ('write.delete.mode' = 'merge-on-read')`)
	execUpdate(t, cnxn, `INSERT INTO mt VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (3, 'c2', 33), (4, 'd', 4), (NULL, 'nk', 0)`)
	execUpdate(t, cnxn, `INSERT INTO mt VALUES (5, 'e', 5), (6, 'f', 6), (7, 'g', 7), (60, 'x', 60), (70, 'y', 70)`)
	execUpdate(t, cnxn, `DELETE FROM mt WHERE v = 'c'`) // a position delete file
	execUpdate(t, cnxn, `CREATE TABLE ms (k BIGINT, v VARCHAR, op VARCHAR)`)
	execUpdate(t, cnxn, `INSERT INTO ms VALUES (1, 'A', 'u'), (2, 'B', 'd'), (3, 'C', 'u'), (8, 'H', 'i'), (9, 'I', 'd'), (NULL, 'N', 'i')`)
	if deletes := deleteFileCount(t, localTable(t, s, "mt")); deletes == 0 {
		t.Fatal("setup: no delete files")
	}
	ref := newRefTable(t, s, "mt", "ms")
	all := `SELECT * FROM mt`
	for _, stmt := range []string{
		`MERGE INTO mt USING ms ON mt.k = ms.k
			WHEN MATCHED AND ms.op = 'd' THEN DELETE
			WHEN MATCHED THEN UPDATE SET v = ms.v, n = mt.n + 100
			WHEN NOT MATCHED AND ms.op <> 'd' THEN INSERT VALUES (ms.k, ms.v, -1)`,
		`MERGE INTO mt AS t USING (SELECT k + 100 AS k, lower(v) AS v FROM ms WHERE k IS NOT NULL) AS s ON t.k = s.k
			WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)`,
		`MERGE INTO mt t USING (VALUES (4, 'four', 44), (NULL, 'null', 0), (500, 'new', 5)) AS s(k, v, n) ON t.k = s.k
			WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`,
		`MERGE INTO mt USING (SELECT * FROM ms WHERE k < 8) AS s ON mt.k = s.k
			WHEN MATCHED THEN DO NOTHING
			WHEN NOT MATCHED BY SOURCE AND mt.k >= 60 THEN DELETE
			WHEN NOT MATCHED BY SOURCE AND mt.k >= 100 THEN UPDATE SET n = 0`,
		`MERGE INTO mt USING ms ON mt.k = ms.k AND ms.op = 'x' WHEN MATCHED THEN DELETE`,
	} {
		want := ref.exec(t, stmt)
		if n := execUpdate(t, cnxn, stmt); n != want {
			t.Fatalf("%s: count %d, DuckDB %d", stmt, n, want)
		}
		if got, want := mustQuery(t, cnxn, all).sorted(), ref.query(t, all); !slices.Equal(got, want) {
			t.Fatalf("after %s:\n got %q\nwant %q", stmt, got, want)
		}
	}

	// A target row matched by two source rows fails, and nothing changes.
	execUpdate(t, cnxn, `INSERT INTO ms VALUES (1, 'dup', 'u')`)
	before := mustQuery(t, cnxn, all).sorted()
	snaps := snapshotCount(t, localTable(t, s, "mt"))
	files := dataFiles(t, localTable(t, s, "mt"))
	for _, stmt := range []string{
		`MERGE INTO mt USING ms ON mt.k = ms.k WHEN MATCHED THEN UPDATE SET v = ms.v`,
		`MERGE INTO mt USING ms ON mt.k = ms.k WHEN MATCHED AND ms.k = 1 THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (ms.k, ms.v, 0)`,
	} {
		err := wantUpdateError(t, cnxn, stmt, "matched more than one source row")
		wantStatus(t, err, adbc.StatusInvalidArgument)
	}
	if got := mustQuery(t, cnxn, all).sorted(); !slices.Equal(got, before) {
		t.Fatalf("a failed MERGE changed the table:\n got %q\nwant %q", got, before)
	}
	if got := snapshotCount(t, localTable(t, s, "mt")); got != snaps {
		t.Fatalf("a failed MERGE committed: %d snapshots, was %d", got, snaps)
	}
	if got := dataFiles(t, localTable(t, s, "mt")); !slices.Equal(got, files) {
		t.Fatalf("a failed MERGE left files: %d, was %d", len(got), len(files))
	}
	wantUpdateError(t, cnxn, `MERGE INTO mt USING ms ON mt.k = ms.k WHEN MATCHED THEN INSERT VALUES (1, 'x', 1)`, "WHEN NOT MATCHED")
	wantUpdateError(t, cnxn, `MERGE INTO mt USING (SELECT 1 AS k) ON mt.k = k WHEN MATCHED THEN DELETE`, "alias")
	// A hostile source or expression reaches DuckDB only as what its
	// parser made of it, and the query checks apply to it.
	wantUpdateError(t, cnxn, `MERGE INTO mt USING (SELECT * FROM read_csv('/etc/passwd')) AS s ON mt.k = 1 WHEN MATCHED THEN DELETE`, "read_csv")
	wantUpdateError(t, cnxn, `MERGE INTO mt USING ms, mt AS x ON mt.k = ms.k WHEN MATCHED THEN DELETE`, "source")
	wantUpdateError(t, cnxn, `MERGE INTO mt USING ms ON mt.k = ms.k) OR (true WHEN MATCHED THEN DELETE`, "")
	wantUpdateError(t, cnxn, `MERGE INTO mt USING ms ON mt.k = ms.k WHEN MATCHED THEN UPDATE SET v = current_setting('threads')`, "current_setting")

	// TRUNCATE: one delete snapshot without any data file. (iceberg-go
	// keeps the delete files listed; they apply to no live data file.)
	ref.exec(t, `DELETE FROM ms WHERE v = 'dup'`)
	want := ref.exec(t, `TRUNCATE mt`)
	if n := execUpdate(t, cnxn, `TRUNCATE TABLE mt`); n != want {
		t.Fatalf("TRUNCATE: count %d, DuckDB %d", n, want)
	}
	tbl := localTable(t, s, "mt")
	snap := tbl.CurrentSnapshot()
	props := snap.Summary.Properties
	if op := string(snap.Summary.Operation); op != "delete" || props["total-data-files"] != "0" || props["total-records"] != "0" {
		t.Fatalf("TRUNCATE snapshot: operation %s, summary %v", op, props)
	}
	wantRows(t, cnxn, `SELECT count(*) FROM mt`, "0")
	if n := execUpdate(t, cnxn, `TRUNCATE mt`); n != 0 {
		t.Fatalf("TRUNCATE of an empty table counted %d", n)
	}
	if got := snapshotCount(t, localTable(t, s, "mt")); got != snapshotCount(t, tbl) {
		t.Fatal("TRUNCATE of an empty table made a snapshot")
	}
	execUpdate(t, cnxn, `INSERT INTO mt VALUES (1, 'again', 1)`)
	wantRows(t, cnxn, all, "1 | again | 1")
	err := wantUpdateError(t, cnxn, `TRUNCATE nosuch`, "nosuch")
	wantStatus(t, err, adbc.StatusNotFound)
}

// TestCreateOrReplaceTable: over a missing table it creates; over an
// existing one the same definition is replaced in place (one snapshot,
// history kept), a new definition is swapped in, and a failing query
// leaves the old table as it was.
func TestCreateOrReplaceTable(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	if n := execUpdate(t, cnxn, `CREATE OR REPLACE TABLE cr PARTITIONED BY (bucket(2, k)) AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) AS v(k, s)`); n != 3 {
		t.Fatalf("create: count %d", n)
	}
	execUpdate(t, cnxn, `DELETE FROM cr WHERE k = 2`)
	old := localTable(t, s, "cr")
	// Same definition, reading the table it replaces: in place.
	if n := execUpdate(t, cnxn, `CREATE OR REPLACE TABLE cr PARTITIONED BY (bucket(2, k)) AS SELECT k * 10 AS k, upper(s) AS s FROM cr`); n != 2 {
		t.Fatalf("replace in place: count %d", n)
	}
	wantRows(t, cnxn, `SELECT * FROM cr`, "10 | A", "30 | C")
	now := localTable(t, s, "cr")
	if now.Metadata().TableUUID() != old.Metadata().TableUUID() || snapshotCount(t, now) != snapshotCount(t, old)+1 {
		t.Fatalf("in-place replace: uuid %s → %s, %d → %d snapshots", old.Metadata().TableUUID(), now.Metadata().TableUUID(), snapshotCount(t, old), snapshotCount(t, now))
	}
	if deleteFileCount(t, now) != 0 {
		t.Fatal("in-place replace kept delete files")
	}
	wantRows(t, cnxn, fmt.Sprintf(`SELECT count(*) FROM cr AT (VERSION => %d)`, old.CurrentSnapshot().SnapshotID), "2")
	// A failing query leaves the old table, and no staging table.
	wantUpdateError(t, cnxn, `CREATE OR REPLACE TABLE cr AS SELECT k, CAST(s AS INTEGER) AS s FROM cr`, "A")
	wantRows(t, cnxn, `SELECT * FROM cr`, "10 | A", "30 | C")
	wantRows(t, cnxn, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'cr%'`, "1")
	// A new shape: the new table takes the name.
	if n := execUpdate(t, cnxn, `CREATE OR REPLACE TABLE cr AS SELECT s AS name, k + 1 AS id, true AS flag FROM cr`); n != 2 {
		t.Fatalf("replace with a new shape: count %d", n)
	}
	wantRows(t, cnxn, `SELECT * FROM cr`, "A | 11 | true", "C | 31 | true")
	// The column-list form: an empty table of the new definition.
	execUpdate(t, cnxn, `CREATE OR REPLACE TABLE cr (id BIGINT, note VARCHAR)`)
	wantRows(t, cnxn, `SELECT count(*) FROM cr`, "0")
	wantRows(t, cnxn, `SELECT column_name FROM information_schema.columns WHERE table_name = 'cr' ORDER BY ordinal_position`, "id", "note")
	wantRows(t, cnxn, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'cr%'`, "1")
	wantUpdateError(t, cnxn, `CREATE OR REPLACE TABLE IF NOT EXISTS cr (id BIGINT)`, "IF NOT EXISTS")
}

// TestConflictingMergeUpdate: MERGEs and UPDATEs that rewrite the same
// file at once follow the rewrite conflict rules: the losers fail with
// ABORTED naming the conflict, and every row moved exactly once per
// statement that committed.
func TestConflictingMergeUpdate(t *testing.T) {
	s := StartCluster(t, Workers(2))
	setup := adbcConn(t, s.Addr())
	execUpdate(t, setup, `CREATE TABLE cm (id BIGINT, v BIGINT)`)
	execUpdate(t, setup, `INSERT INTO cm VALUES (1, 0), (2, 0), (3, 0), (4, 0)`)
	stmts := []string{
		`UPDATE cm SET v = v + 1`,
		`MERGE INTO cm USING (VALUES (1), (2), (3), (4)) AS s(id) ON cm.id = s.id WHEN MATCHED THEN UPDATE SET v = cm.v + 1`,
		`MERGE INTO cm USING (VALUES (1), (2), (3), (4), (5)) AS s(id) ON cm.id = s.id
			WHEN MATCHED THEN UPDATE SET v = cm.v + 1 WHEN NOT MATCHED THEN INSERT VALUES (s.id + 100, 0)`,
		`UPDATE cm SET v = v + 1 WHERE id < 100`,
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stmts))
	for i, q := range stmts {
		cnxn := adbcConn(t, s.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tryUpdate(t, cnxn, q)
		}()
	}
	wg.Wait()
	ok, inserted := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
			if i == 2 {
				inserted = 1
			}
		case strings.Contains(err.Error(), "conflict"):
			if !strings.Contains(err.Error(), "Aborted") {
				t.Fatalf("conflict without ABORTED: %v", err)
			}
		default:
			t.Fatalf("%s: unexpected error: %v", stmts[i], err)
		}
	}
	if ok == 0 {
		t.Fatal("no statement succeeded")
	}
	t.Logf("%d of %d statements committed", ok, len(stmts))
	wantRows(t, setup, `SELECT count(*), min(v) = max(v), max(v) FROM cm WHERE id < 100`, fmt.Sprintf("4 | true | %d", ok))
	wantRows(t, setup, `SELECT count(*) FROM cm WHERE id >= 100`, fmt.Sprint(inserted))
}

// TestMergeV3Lineage: a MERGE on a format-version 3 table keeps row
// lineage as UPDATE does: unchanged and updated rows keep their _row_id,
// updated and inserted rows take the commit's sequence number.
func TestMergeV3Lineage(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE m3 (id BIGINT, v VARCHAR) WITH ('format-version' = '3')`)
	execUpdate(t, cnxn, `INSERT INTO m3 VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')`)
	before := lineageOf(t, cnxn, "m3")
	stmt := `MERGE INTO m3 USING (VALUES (1, 'A'), (2, NULL), (9, 'I')) AS s(id, v) ON m3.id = s.id
		WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)`
	if n := execUpdate(t, cnxn, stmt); n != 3 {
		t.Fatalf("count %d, want 3", n)
	}
	wantRows(t, cnxn, `SELECT * FROM m3`, "1 | A", "3 | c", "4 | d", "9 | I")
	seq := localTable(t, s, "m3").CurrentSnapshot().SequenceNumber
	checkLineageKept(t, stmt, before, lineageOf(t, cnxn, "m3"), seq)
}
