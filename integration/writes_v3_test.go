package integration

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/iceberg-go/table"
)

// checkRowLineage checks a v3 table's row ids: every live data file has a
// first_row_id, the files' id ranges do not overlap, and all lie below the
// table's next-row-id.
func checkRowLineage(t *testing.T, tbl *table.Table) {
	t.Helper()
	if tbl.Metadata().Version() < 3 {
		t.Fatalf("format version %d, want 3", tbl.Metadata().Version())
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		path       string
		start, end int64
	}
	seen := map[string]bool{}
	var spans []span
	for _, task := range tasks {
		f := task.File
		if seen[f.FilePath()] {
			continue
		}
		seen[f.FilePath()] = true
		id := f.FirstRowID()
		if id == nil {
			t.Fatalf("%s has no first_row_id", f.FilePath())
		}
		spans = append(spans, span{f.FilePath(), *id, *id + f.Count()})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	next := tbl.Metadata().NextRowID()
	for i, s := range spans {
		if s.start < 0 || s.end > next {
			t.Fatalf("%s: row ids [%d, %d) outside [0, next-row-id %d)", s.path, s.start, s.end, next)
		}
		if i > 0 && spans[i-1].end > s.start {
			t.Fatalf("row ids overlap: %s [%d, %d) and %s [%d, %d)",
				spans[i-1].path, spans[i-1].start, spans[i-1].end, s.path, s.start, s.end)
		}
	}
}

// partitionTuples is the sorted list of the partition values of a table's
// live data files, one string per distinct tuple.
func partitionTuples(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, task := range tasks {
		p := task.File.Partition()
		keys := slices.Sorted(maps.Keys(p))
		s := ""
		for _, k := range keys {
			s += fmt.Sprintf("%d=%v;", k, p[k])
		}
		set[s] = true
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out
}

// TestWritesV3 runs every statement that commits worker-written files —
// INSERT … SELECT, CTAS, copy-on-write UPDATE and DELETE, bulk ingest — on
// a format-version 3 table partitioned by transforms of every result kind,
// and the same statements on a v2 twin. After each: the rows equal
// single-node DuckDB's, the files' partition values equal the twin's, and
// the v3 table's row ids are assigned without overlap.
func TestWritesV3(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	cnxn := adbcConn(t, s.Addr())
	const cols = `(id BIGINT NOT NULL, d DATE, amt DECIMAL(10,2), flag BOOLEAN, s VARCHAR, ts TIMESTAMPTZ, n INTEGER)`
	const part = `PARTITIONED BY (d, amt, flag, truncate(2, s), month(ts), bucket(3, n))`
	for _, v := range []string{"2", "3"} {
		execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE w%s %s %s WITH ('format-version' = '%s')`, v, cols, part, v))
	}
	src := `SELECT id, DATE '2024-01-01' + CAST(id % 3 AS INTEGER), CAST((id % 4) / 2 AS DECIMAL(10,2)),
		id % 2 = 0, status, ordered_at, CAST(customer_id AS INTEGER) FROM orders WHERE id <= 3000`
	ref := newRefTable(t, s, "orders")
	ref.exec(t, `CREATE TABLE w `+cols)

	check := func(step string) {
		t.Helper()
		w2, w3 := localTable(t, s, "w2"), localTable(t, s, "w3")
		checkRowLineage(t, w3)
		if a, b := partitionTuples(t, w2), partitionTuples(t, w3); !slices.Equal(a, b) {
			t.Fatalf("after %s: partitions of v2 and v3 differ:\n%q\n%q", step, head(a), head(b))
		}
		for _, q := range []string{
			`SELECT * FROM %s`,
			`SELECT count(*), sum(id) FROM %s WHERE d = DATE '2024-01-02' AND amt = 0.50 AND flag`,
			`SELECT count(*) FROM %s WHERE s LIKE 'sh%%' AND ts >= TIMESTAMPTZ '2024-01-15 00:00:00+00'`,
		} {
			want := ref.query(t, fmt.Sprintf(q, "w"))
			for _, name := range []string{"w2", "w3"} {
				if got := mustQuery(t, cnxn, fmt.Sprintf(q, name)).sorted(); !slices.Equal(got, want) {
					t.Fatalf("after %s, %s: %d rows %q, DuckDB %d %q", step, fmt.Sprintf(q, name), len(got), head(got), len(want), head(want))
				}
			}
		}
	}

	steps := []string{
		`INSERT INTO {t} ` + src,
		`UPDATE {t} SET amt = amt + 1, s = upper(s) WHERE id % 5 = 0`,
		`DELETE FROM {t} WHERE id % 7 = 0`,
		`INSERT INTO {t} SELECT id + 10000, d, amt, flag, s, ts, n FROM {t} WHERE id % 3 = 0`,
		`DELETE FROM {t} WHERE d = DATE '2024-01-03'`,
	}
	// The lineage columns exist on v3 tables only, and a star leaves
	// them out (check compares SELECT * with DuckDB's 7 columns).
	if _, err := query(t, cnxn, `SELECT _row_id FROM w2`); err == nil || !strings.Contains(err.Error(), "_row_id") {
		t.Fatalf("_row_id of a v2 table: %v", err)
	} else {
		wantStatus(t, err, adbc.StatusInvalidArgument)
	}
	before := lineageOf(t, cnxn, "w3")
	for _, st := range steps {
		want := ref.exec(t, strings.ReplaceAll(st, "{t}", "w"))
		for _, name := range []string{"w2", "w3"} {
			q := strings.ReplaceAll(st, "{t}", name)
			snaps := snapshotCount(t, localTable(t, s, name))
			if n := execUpdate(t, cnxn, q); n != want {
				t.Fatalf("%s: count %d, DuckDB %d", q, n, want)
			}
			if got := snapshotCount(t, localTable(t, s, name)); got != snaps+1 {
				t.Fatalf("%s: %d snapshots after %d", q, got, snaps)
			}
		}
		check(st)
		after := lineageOf(t, cnxn, "w3")
		checkLineageKept(t, st, before, after, localTable(t, s, "w3").CurrentSnapshot().SequenceNumber)
		before = after
	}

	// CTAS into v3, and bulk ingest appending to it.
	n := execUpdate(t, cnxn, `CREATE TABLE c3 PARTITIONED BY (bucket(4, id)) WITH ('format-version' = '3') AS SELECT id, s, amt FROM w3`)
	wantN := mustQuery(t, cnxn, `SELECT count(*) FROM w3`).rows[0]
	if fmt.Sprint(n) != wantN {
		t.Fatalf("CTAS counted %d, source has %s", n, wantN)
	}
	c3 := localTable(t, s, "c3")
	checkRowLineage(t, c3)
	execUpdate(t, cnxn, `CREATE TABLE i3 (id BIGINT, name VARCHAR, score DOUBLE) PARTITIONED BY (bucket(4, id)) WITH ('format-version' = '3')`)
	for i := range 2 {
		if n, err := ingest(t, cnxn, "i3", adbc.OptionValueIngestModeAppend, ingestRows(t, i*10_000, 4, 2500)); err != nil || n != 10_000 {
			t.Fatalf("ingest into v3: %d, %v", n, err)
		}
	}
	i3 := localTable(t, s, "i3")
	checkRowLineage(t, i3)
	if got := i3.Metadata().NextRowID(); got != 20_000 {
		t.Fatalf("next-row-id %d after ingesting 20000 rows", got)
	}
	wantRows(t, cnxn, `SELECT count(*), count(DISTINCT id), sum(id) FROM i3`, fmt.Sprintf("20000 | 20000 | %d", 19_999*20_000/2))
	if tuples := partitionTuples(t, i3); len(tuples) != 4 {
		t.Fatalf("ingest into bucket(4, id) made partitions %q", tuples)
	}
}

// rowLineage is one row's content and lineage columns.
type rowLineage struct {
	row        string
	rowID, seq int64
}

// lineageOf reads every row of a v3 table with its _row_id and
// _last_updated_sequence_number, by id (the first column).
func lineageOf(t *testing.T, cnxn adbc.Connection, name string) map[string]rowLineage {
	t.Helper()
	res := mustQuery(t, cnxn, `SELECT *, _row_id, _last_updated_sequence_number FROM `+name)
	out := map[string]rowLineage{}
	for _, r := range res.rows {
		f := strings.Split(r, " | ")
		var l rowLineage
		if _, err := fmt.Sscan(f[len(f)-2], &l.rowID); err != nil {
			t.Fatalf("_row_id of %q: %v", r, err)
		}
		if _, err := fmt.Sscan(f[len(f)-1], &l.seq); err != nil {
			t.Fatalf("_last_updated_sequence_number of %q: %v", r, err)
		}
		l.row = strings.Join(f[:len(f)-2], " | ")
		if _, dup := out[f[0]]; dup {
			t.Fatalf("id %s twice", f[0])
		}
		out[f[0]] = l
	}
	return out
}

// checkLineageKept checks the v3 row-lineage rules across one statement
// (committed as sequence number seq): row ids are unique; a row the
// statement did not change keeps its _row_id and
// _last_updated_sequence_number, also when its file was rewritten; a row
// it changed keeps its _row_id and takes seq; a new row takes seq.
func checkLineageKept(t *testing.T, stmt string, before, after map[string]rowLineage, seq int64) {
	t.Helper()
	ids := map[int64]string{}
	kept, changed, added := 0, 0, 0
	for id, a := range after {
		if other, dup := ids[a.rowID]; dup {
			t.Fatalf("after %s: rows %s and %s share _row_id %d", stmt, other, id, a.rowID)
		}
		ids[a.rowID] = id
		b, ok := before[id]
		switch {
		case !ok:
			added++
			if a.seq != seq {
				t.Fatalf("after %s: new row %s has sequence number %d, want %d", stmt, id, a.seq, seq)
			}
		case b.row == a.row:
			kept++
			if a.rowID != b.rowID || a.seq != b.seq {
				t.Fatalf("after %s: unchanged row %s lineage (%d, %d) became (%d, %d)", stmt, id, b.rowID, b.seq, a.rowID, a.seq)
			}
		default:
			changed++
			if a.rowID != b.rowID || a.seq != seq {
				t.Fatalf("after %s: updated row %s lineage (%d, %d) became (%d, %d), want (%d, %d)", stmt, id, b.rowID, b.seq, a.rowID, a.seq, b.rowID, seq)
			}
		}
	}
	t.Logf("%s: %d rows kept their lineage, %d updated, %d new", stmt, kept, changed, added)
}

// TestConcurrentInsertsV3: parallel INSERTs into one v3 table, each of
// which loses races and starts its commit over with new row ids: every row
// arrives once and no two files share a row id.
func TestConcurrentInsertsV3(t *testing.T) {
	s := StartCluster(t, Workers(2), Demo())
	setup := adbcConn(t, s.Addr())
	execUpdate(t, setup, `CREATE TABLE h3 (client INTEGER NOT NULL, n INTEGER NOT NULL, id BIGINT) WITH ('format-version' = '3')`)
	const clients, inserts = 4, 6
	runInserts(t, s, clients, inserts, func(c, i int) string {
		return fmt.Sprintf(`INSERT INTO h3 SELECT %d, %d, id FROM customers WHERE id %% %d = %d`, c, i, inserts, i)
	}, -1)
	customers := mustQuery(t, setup, `SELECT count(*) FROM customers`).rows[0]
	wantRows(t, setup, `SELECT count(*) / `+fmt.Sprint(clients)+`, count(DISTINCT (client, id)) / `+fmt.Sprint(clients)+` FROM h3`,
		customers+" | "+customers)
	tbl := localTable(t, s, "h3")
	if got := snapshotCount(t, tbl); got != clients*inserts {
		t.Fatalf("%d snapshots, want %d", got, clients*inserts)
	}
	checkRowLineage(t, tbl)
}
