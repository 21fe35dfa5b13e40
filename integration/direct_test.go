package integration

import (
	"context"
	"github.com/icefloe/icefloe/internal/parse"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/planner"
)

func directScans(s *cluster.Standalone) int64 {
	var n int64
	for _, w := range s.Workers {
		n += w.DirectScans()
	}
	return n
}

// TestDirectParquet: workers read local warehouse files with DuckDB's
// reader when that reads what iceberg-go reads, and fall back otherwise:
// a file without Parquet field ids (added from outside, read through the
// table's name mapping) and a table with merge-on-read deletes still
// return their right rows.
func TestDirectParquet(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE dp (id BIGINT, s VARCHAR, d DATE)`)
	execUpdate(t, cnxn, `INSERT INTO dp VALUES (1, 'a', DATE '2024-01-01'), (2, 'b', NULL)`)
	execUpdate(t, cnxn, `ALTER TABLE dp ADD COLUMN x DOUBLE`)
	execUpdate(t, cnxn, `ALTER TABLE dp RENAME COLUMN s TO name`)
	execUpdate(t, cnxn, `INSERT INTO dp VALUES (3, 'c', DATE '2024-01-03', 1.5)`)
	before := directScans(s)
	wantRows(t, cnxn, `SELECT id, name, d, x FROM dp WHERE id > 0`,
		"1 | a | 2024-01-01 | NULL", "2 | b | NULL | NULL", "3 | c | 2024-01-03 | 1.5")
	if directScans(s) == before {
		t.Fatal("a plain local table was not read with DuckDB's Parquet reader")
	}
	// A gathered query (median does not split) runs on one worker that
	// reads both sides itself.
	execUpdate(t, cnxn, `CREATE TABLE dq (id BIGINT, w VARCHAR)`)
	execUpdate(t, cnxn, `INSERT INTO dq VALUES (1, 'one'), (3, 'three')`)
	execUpdate(t, cnxn, `INSERT INTO dq VALUES (2, 'two')`)
	const join = `SELECT dq.w, median(dp.id) FROM dp JOIN dq ON dp.id = dq.id GROUP BY dq.w`
	plan, err := s.Coordinator.Planner.Plan(context.Background(), planner.Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}, parse.Must(join))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Strategy != planner.Gather || !strings.Contains(plan.Explain, "DuckDB's Parquet reader") {
		t.Fatalf("join plan:\n%s", plan.Explain)
	}
	wantRows(t, cnxn, join, "one | 1", "two | 2", "three | 3")

	// Files iceberg-go splits into byte ranges (over the table's
	// read.split.target-size, here one byte, with a row group per 100
	// rows) are planned whole again and read in place.
	execUpdate(t, cnxn, `CREATE TABLE dsplit (id BIGINT, v VARCHAR) WITH ('write.parquet.row-group-limit' = '100', 'read.split.target-size' = '1')`)
	execUpdate(t, cnxn, `INSERT INTO dsplit SELECT i, 'v' || i FROM range(1000) t(i)`)
	if offsets := splitOffsets(t, localTable(t, s, "dsplit")); offsets < 2 {
		t.Fatalf("dsplit's file has %d row groups; the test needs more", offsets)
	}
	const splitJoin = `SELECT dq.w, median(dsplit.id), count(*) FROM dsplit JOIN dq ON dsplit.id % 3 + 1 = dq.id GROUP BY dq.w`
	plan, err = s.Coordinator.Planner.Plan(context.Background(), planner.Session{Catalog: catalog.LocalCatalogName, Schema: catalog.DefaultSchema}, parse.Must(splitJoin))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Strategy != planner.Gather || !strings.Contains(plan.Explain, "DuckDB's Parquet reader") {
		t.Fatalf("join over split files:\n%s", plan.Explain)
	}
	before = directScans(s)
	wantRows(t, cnxn, splitJoin, "one | 499.5 | 334", "two | 499 | 333", "three | 500 | 333")
	if directScans(s) == before {
		t.Fatal("a split file was not read with DuckDB's Parquet reader")
	}

	// A file written without field ids, added to the table.
	execUpdate(t, cnxn, `CREATE TABLE nofid (id BIGINT, name VARCHAR)`)
	tbl := localTable(t, s, "nofid")
	loc, _ := url.Parse(tbl.Location())
	path := filepath.Join(loc.Path, "data", "external.parquet")
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rdr := rowStream(t, sc, 10, 1, 3, func(bld *array.RecordBuilder, _, id int) {
		bld.Field(0).(*array.Int64Builder).Append(int64(id))
		bld.Field(1).(*array.StringBuilder).Append("ext")
	})
	rec := func() arrow.RecordBatch { rdr.Next(); r := rdr.RecordBatch(); r.Retain(); return r }()
	rdr.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pqarrow.WriteTable(at, f, 1024, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator))); err != nil {
		t.Fatal(err)
	}
	at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(context.Background(), []string{"file://" + path}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	before = directScans(s)
	wantRows(t, cnxn, `SELECT id, name FROM nofid WHERE id > 0`, "10 | ext", "11 | ext", "12 | ext")
	if directScans(s) != before {
		t.Fatal("a file without field ids was read with DuckDB's Parquet reader")
	}

	// A data file that disappears after its footer was cached (e.g.
	// removed under a pinned snapshot) fails the query as iceberg-go's
	// read does: NotFound, naming the file.
	files := dataFiles(t, localTable(t, s, "dq"))
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	// Another query over the same files: the result cache keeps the
	// join's answer for the unchanged snapshot.
	_, err = query(t, cnxn, join+" HAVING count(*) > 0")
	if err == nil || !strings.Contains(err.Error(), filepath.Base(files[0])) {
		t.Fatalf("query over a removed file: %v", err)
	}
	wantStatus(t, err, adbc.StatusNotFound)

	// Merge-on-read deletes: iceberg-go applies them.
	execUpdate(t, cnxn, `CREATE TABLE mor (id BIGINT, v VARCHAR) WITH ('write.delete.mode' = 'merge-on-read')`)
	execUpdate(t, cnxn, `INSERT INTO mor VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	execUpdate(t, cnxn, `DELETE FROM mor WHERE id = 2`)
	wantRows(t, cnxn, `SELECT id, v FROM mor WHERE id > 0`, "1 | a", "3 | c")
}

// TestDirectParquetNaN: DuckDB's Parquet reader prunes row groups on
// footer min/max, which leave NaN out; a direct scan of a float column
// that may hold NaN (nan_value_counts not 0, or missing as in files other
// writers made) must not lose the NaN rows, nor keep them where a filter
// proved always true on the bounds would.
func TestDirectParquetNaN(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, `CREATE TABLE n (id BIGINT, f DOUBLE)`)
	execUpdate(t, cnxn, `INSERT INTO n VALUES (1, 1.0), (2, 'NaN'), (3, 7.0)`)
	// The same rows written by iceberg-go alone, without nan_value_counts.
	execUpdate(t, cnxn, `CREATE TABLE n_other (id BIGINT, f DOUBLE)`)
	other := localTable(t, s, "n_other")
	sc, err := table.SchemaToArrowSchema(other.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{1, math.NaN(), 7}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(context.Background(), other, sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
		if err != nil {
			t.Fatal(err)
		}
		if len(df.NaNValueCounts()) != 0 {
			t.Fatalf("iceberg-go now writes nan_value_counts (%v): this case no longer stands for other writers", df.NaNValueCounts())
		}
		files = append(files, df)
	}
	tx := other.NewTransaction()
	if err := tx.AddDataFiles(context.Background(), files, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	tbl := localTable(t, s, "n")
	for _, task := range mustPlan(t, tbl) {
		if n, ok := task.File.NaNValueCounts()[2]; !ok || n != 1 {
			t.Fatalf("icefloe's file has nan_value_counts %v, want {2: 1}", task.File.NaNValueCounts())
		}
	}
	for _, name := range []string{"n", "n_other"} {
		before := directScans(s)
		for _, c := range []struct {
			where string
			want  []string
		}{
			{"f > 8", []string{"2 | NaN"}},
			{"f = 'NaN'::DOUBLE", []string{"2 | NaN"}},
			{"f >= 7.5", []string{"2 | NaN"}},
			{"f > 'Infinity'", []string{"2 | NaN"}},
			{"NOT (f <= 8)", []string{"2 | NaN"}},
			{"f <= 7", []string{"1 | 1", "3 | 7"}},
			{"f < 'NaN'", []string{"1 | 1", "3 | 7"}},
			{"f <> 7", []string{"1 | 1", "2 | NaN"}},
		} {
			wantRows(t, cnxn, "SELECT id, f FROM "+name+" WHERE "+c.where, c.want...)
		}
		if directScans(s) == before {
			t.Fatalf("%s was not read with DuckDB's Parquet reader", name)
		}
	}
}

// mustPlan plans every file task of tbl's current snapshot.
func mustPlan(t testing.TB, tbl *table.Table) []table.FileScanTask {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// splitOffsets is the most split offsets (row groups) a data file of tbl
// has.
func splitOffsets(t *testing.T, tbl *table.Table) int {
	t.Helper()
	n := 0
	for _, task := range mustPlan(t, tbl) {
		n = max(n, len(task.File.SplitOffsets()))
	}
	return n
}
