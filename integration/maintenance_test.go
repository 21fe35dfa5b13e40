package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// maintLayouts are the table shapes every maintenance test runs on.
var maintLayouts = []struct{ name, version, part string }{
	{"v2", "2", ""},
	{"v2p", "2", "PARTITIONED BY (p)"},
	{"v3", "3", ""},
	{"v3p", "3", "PARTITIONED BY (p)"},
}

const maintCols = `(id BIGINT NOT NULL, p INTEGER, s VARCHAR)`

// smallWrites gives table name many small files and some delete files:
// twelve six-row INSERTs (one file per partition each), then a
// merge-on-read DELETE. The same statements run on ref when it is set.
func smallWrites(t *testing.T, exec func(string) int64, name string) {
	t.Helper()
	for i := 0; i < 12; i++ {
		var vals []string
		for j := 1; j <= 6; j++ {
			id := i*6 + j
			vals = append(vals, fmt.Sprintf("(%d, %d, 's%d')", id, id%3, id))
		}
		exec(`INSERT INTO ` + name + ` VALUES ` + strings.Join(vals, ", "))
	}
	exec(`DELETE FROM ` + name + ` WHERE id IN (5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70)`)
}

// liveDataFiles are the data files of tbl's current snapshot and how many
// delete files apply to them.
func liveDataFiles(t testing.TB, tbl *table.Table) (data []iceberg.DataFile, deletes int) {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	dels := map[string]bool{}
	for _, task := range tasks {
		if !seen[task.File.FilePath()] {
			seen[task.File.FilePath()] = true
			data = append(data, task.File)
		}
		for _, d := range slices.Concat(task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
			key := d.FilePath()
			if d.ContentOffset() != nil {
				key += "@" + strconv.FormatInt(*d.ContentOffset(), 10)
			}
			dels[key] = true
		}
	}
	return data, len(dels)
}

// fileIDs reads the id column of one data file in file order.
func fileIDs(t testing.TB, tbl *table.Table, df iceberg.DataFile) []int64 {
	t.Helper()
	ctx := context.Background()
	tasks, err := tbl.Scan(table.WithSelectedFields("id")).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []table.FileScanTask
	for _, task := range tasks {
		if task.File.FilePath() == df.FilePath() {
			mine = append(mine, task)
		}
	}
	_, recs, err := tbl.Scan(table.WithSelectedFields("id")).ReadTasks(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			ids = append(ids, col.Value(i))
		}
		rec.Release()
	}
	return ids
}

func cellsOf(row string) []string { return strings.Split(row, " | ") }

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

// TestRewriteDataFiles compacts tables with many small files and
// merge-on-read deletes, v2 and v3, partitioned and not: the rows equal
// DuckDB's before and after, one file per partition is left, sorted by the
// table's sort order, the delete files are gone, one replace snapshot was
// added, v3 rows keep their lineage, and older snapshots still read.
func TestRewriteDataFiles(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	ref := newRefTable(t, s)
	ref.exec(t, `CREATE TABLE r `+maintCols)
	smallWrites(t, func(q string) int64 { return ref.exec(t, q) }, "r")
	want := ref.query(t, `SELECT * FROM r`)

	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := "c" + l.name
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s ORDERED BY (id DESC) WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read')`,
				name, maintCols, l.part, l.version))
			smallWrites(t, func(q string) int64 { return execUpdate(t, cnxn, q) }, name)
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			tbl := localTable(t, s, name)
			before, deletes := liveDataFiles(t, tbl)
			if deletes == 0 {
				t.Fatal("the DELETE wrote no delete files")
			}
			var lineage map[string]rowLineage
			if l.version == "3" {
				lineage = lineageOf(t, cnxn, name)
			}
			old := tbl.CurrentSnapshot().SnapshotID
			snaps := snapshotCount(t, tbl)

			res := mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => 'default.`+name+`', options => map('min-input-files', '2'))`)
			if got := columnNames(res); !slices.Equal(got, []string{"rewritten_data_files_count", "added_data_files_count",
				"rewritten_bytes_count", "failed_data_files_count", "removed_delete_files_count"}) {
				t.Fatalf("result columns %q", got)
			}
			if len(res.rows) != 1 {
				t.Fatalf("result rows %q", res.rows)
			}
			row := cellsOf(res.rows[0])
			parts := 1
			if l.part != "" {
				parts = 3
			}
			if atoi(t, row[0]) != int64(len(before)) || atoi(t, row[1]) != int64(parts) || atoi(t, row[3]) != 0 || atoi(t, row[4]) != int64(deletes) {
				t.Fatalf("result %q: want %d rewritten, %d added, %d delete files removed", res.rows[0], len(before), parts, deletes)
			}

			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			tbl = localTable(t, s, name)
			after, deletesAfter := liveDataFiles(t, tbl)
			if len(after) != parts || deletesAfter != 0 {
				t.Fatalf("after: %d data files, %d delete files; want %d and 0", len(after), deletesAfter, parts)
			}
			if got := snapshotCount(t, tbl); got != snaps+1 {
				t.Fatalf("%d snapshots after %d", got, snaps)
			}
			if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
				t.Fatalf("operation %s, want replace", op)
			}
			for _, df := range after {
				ids := fileIDs(t, tbl, df)
				if !slices.IsSortedFunc(ids, func(a, b int64) int { return int(b - a) }) {
					t.Fatalf("%s is not sorted by id DESC: %v", df.FilePath(), ids)
				}
			}
			if lineage != nil {
				checkRowLineage(t, tbl)
				got := lineageOf(t, cnxn, name)
				for id, b := range lineage {
					if a := got[id]; a != b {
						t.Fatalf("row %s lineage %+v became %+v", id, b, a)
					}
				}
			}
			wantRows(t, cnxn, fmt.Sprintf(`SELECT count(*) FROM %s AT (VERSION => %d)`, name, old), strconv.Itoa(len(want)))

			// Nothing left to do: no new snapshot.
			res = mustQuery(t, cnxn, `CALL system.rewrite_data_files('default.`+name+`')`)
			if row := cellsOf(res.rows[0]); row[0] != "0" || row[1] != "0" {
				t.Fatalf("second run %q, want nothing rewritten", res.rows[0])
			}
			if got := snapshotCount(t, localTable(t, s, name)); got != snaps+1 {
				t.Fatalf("an empty rewrite committed: %d snapshots", got)
			}
		})
	}
}

func columnNames(r result) []string {
	var out []string
	for _, f := range r.schema.Fields() {
		out = append(out, f.Name)
	}
	return out
}
