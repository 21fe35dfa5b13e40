package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/catalog"
)

// maintLayout is a table shape: format version and partitioning.
type maintLayout struct{ name, version, part string }

// maintLayouts are the table shapes every maintenance test runs on.
var maintLayouts = []maintLayout{
	{"v2", "2", ""},
	{"v2p", "2", "PARTITIONED BY (p)"},
	{"v3", "3", ""},
	{"v3p", "3", "PARTITIONED BY (p)"},
}

const maintCols = `(id BIGINT NOT NULL, p INTEGER, s VARCHAR)`

// newMaintTable creates prefix+l.name in layout l with merge-on-read
// deletes (and the extra properties, ", 'k' = 'v'…"), fills it with
// smallWrites and returns its name.
func newMaintTable(t *testing.T, cnxn adbc.Connection, prefix string, l maintLayout, extra string) string {
	t.Helper()
	name := prefix + l.name
	execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read'%s)`, name, maintCols, l.part, l.version, extra))
	smallWrites(t, func(q string) int64 { return execUpdate(t, cnxn, q) }, name)
	return name
}

// smallWrites gives table name many small files and some delete files
// (with 'write.delete.mode' = 'merge-on-read'): smallInserts, then a
// DELETE whose filter converts exactly to an Iceberg filter.
func smallWrites(t *testing.T, exec func(string) int64, name string) {
	t.Helper()
	smallInserts(t, exec, name)
	exec(`DELETE FROM ` + name + ` WHERE id IN (5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70)`)
}

// smallInserts runs twelve six-row INSERTs into name (one file per
// partition each, p = id % 3).
func smallInserts(t *testing.T, exec func(string) int64, name string) {
	t.Helper()
	for i := 0; i < 12; i++ {
		var vals []string
		for j := 1; j <= 6; j++ {
			id := i*6 + j
			vals = append(vals, fmt.Sprintf("(%d, %d, 's%d')", id, id%3, id))
		}
		exec(`INSERT INTO ` + name + ` VALUES ` + strings.Join(vals, ", "))
	}
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

// reachable are the data and delete files every snapshot of tbl reads.
func reachable(t testing.TB, tbl *table.Table) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			for _, f := range slices.Concat([]iceberg.DataFile{task.File}, task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
				out[strings.TrimPrefix(f.FilePath(), "file://")] = true
			}
		}
	}
	return out
}

// snapshotIDs lists tbl's snapshots, oldest first.
func snapshotIDs(tbl *table.Table) []int64 {
	var ids []int64
	for _, s := range tbl.Metadata().Snapshots() {
		ids = append(ids, s.SnapshotID)
	}
	return ids
}

// TestExpireSnapshots expires all but the last snapshot of main
// while a tag holds an old one: the kept snapshots are exactly those, the
// rows are unchanged, the tag still reads, an expired snapshot does not,
// and the files on disk are exactly the files the kept snapshots read.
func TestExpireSnapshots(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := newMaintTable(t, cnxn, "x", l, "")
			ids := snapshotIDs(localTable(t, s, name))
			tagged := ids[2]
			execUpdate(t, cnxn, fmt.Sprintf(`ALTER TABLE %s CREATE TAG early AS OF VERSION %d`, name, tagged))
			mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => '`+name+`', options => map('min-input-files', '2'))`)
			want := mustQuery(t, cnxn, `SELECT * FROM `+name).sorted()
			early := mustQuery(t, cnxn, `SELECT * FROM `+name+` AT (VERSION => 'early')`).sorted()
			tbl := localTable(t, s, name)
			all := snapshotIDs(tbl)
			main := tbl.CurrentSnapshot()
			keep := []int64{main.SnapshotID, tagged}
			filesBefore := len(dataFiles(t, tbl))

			res := mustQuery(t, cnxn, fmt.Sprintf(`CALL system.expire_snapshots(table => '%s', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`, name))
			if got := columnNames(res); !slices.Equal(got, []string{"deleted_data_files_count", "deleted_position_delete_files_count",
				"deleted_equality_delete_files_count", "deleted_manifest_files_count", "deleted_manifest_lists_count", "deleted_statistics_files_count"}) {
				t.Fatalf("result columns %q", got)
			}
			row := cellsOf(res.rows[0])
			tbl = localTable(t, s, name)
			got := snapshotIDs(tbl)
			slices.Sort(got)
			slices.Sort(keep)
			if !slices.Equal(got, keep) {
				t.Fatalf("snapshots left %v, want %v (had %v)", got, keep, all)
			}
			if atoi(t, row[4]) != int64(len(all)-len(keep)) {
				t.Fatalf("result %q: want %d manifest lists deleted", res.rows[0], len(all)-len(keep))
			}
			onDisk := dataFiles(t, tbl)
			if deleted := atoi(t, row[0]) + atoi(t, row[1]); deleted == 0 || int(deleted) != filesBefore-len(onDisk) {
				t.Fatalf("result %q: %d files before, %d after", res.rows[0], filesBefore, len(onDisk))
			}
			live := reachable(t, tbl)
			for _, f := range onDisk {
				if !live[f] {
					t.Fatalf("%s is on disk but no kept snapshot reads it", f)
				}
			}
			if len(onDisk) != len(live) {
				t.Fatalf("%d files on disk, %d read by the kept snapshots", len(onDisk), len(live))
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			wantRows(t, cnxn, `SELECT * FROM `+name+` AT (VERSION => 'early')`, early...)
			_, err := query(t, cnxn, fmt.Sprintf(`SELECT * FROM %s AT (VERSION => %d)`, name, ids[4]))
			wantStatus(t, err, adbc.StatusNotFound)
		})
	}
}

// tableDir is the local directory of tbl's location.
func tableDir(t testing.TB, tbl *table.Table) string {
	t.Helper()
	dir, ok := catalog.LocalPath(tbl.Location())
	if !ok {
		t.Fatalf("table location %s is not local", tbl.Location())
	}
	return dir
}

// strayFile writes a file nothing references, last modified age ago.
func strayFile(t testing.TB, path string, age time.Duration) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not iceberg"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Add(-age)
	if err := os.Chtimes(path, ts, ts); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestRemoveOrphanFiles: stray files under a table are listed by a dry
// run when old enough, deleted otherwise; files younger than a day need
// override_min_age; with it, a dry run down to the present lists exactly
// the stray files (no file the table uses), and the rows stay the same.
func TestRemoveOrphanFiles(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := newMaintTable(t, cnxn, "o", l, "")
			mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => '`+name+`', options => map('min-input-files', '2'))`)
			want := mustQuery(t, cnxn, `SELECT * FROM `+name).sorted()
			dir := tableDir(t, localTable(t, s, name))
			old := strayFile(t, filepath.Join(dir, "data", "p=9", "stray-old.parquet"), 96*time.Hour)
			mid := strayFile(t, filepath.Join(dir, "metadata", "stray-mid.avro"), 48*time.Hour)
			fresh := strayFile(t, filepath.Join(dir, "data", "stray-fresh.parquet"), 0)
			call := func(args string) []string {
				t.Helper()
				res := mustQuery(t, cnxn, `CALL system.remove_orphan_files(table => '`+name+`'`+args+`)`)
				if got := columnNames(res); !slices.Equal(got, []string{"orphan_file_location"}) {
					t.Fatalf("result columns %q", got)
				}
				out := res.sorted()
				for i := range out {
					out[i] = strings.TrimPrefix(out[i], "file://")
				}
				return out
			}
			if got := call(`, dry_run => true`); !slices.Equal(got, []string{old}) {
				t.Fatalf("dry run (default: older than 3 days) listed %q, want %q", got, old)
			}
			if !exists(old) {
				t.Fatal("a dry run deleted a file")
			}
			since := time.Now().Add(-30 * time.Hour).UTC().Format("2006-01-02 15:04:05")
			if got, want := call(`, older_than => TIMESTAMP '`+since+`'`), slices.Sorted(slices.Values([]string{mid, old})); !slices.Equal(got, want) {
				t.Fatalf("removed %q, want %q", got, want)
			}
			if exists(old) || exists(mid) || !exists(fresh) {
				t.Fatal("the files removed are not the files listed")
			}
			now := time.Now().Add(time.Minute).UTC().Format("2006-01-02 15:04:05")
			_, err := query(t, cnxn, `CALL system.remove_orphan_files(table => '`+name+`', older_than => TIMESTAMP '`+now+`')`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
			if !strings.Contains(err.Error(), "override_min_age") {
				t.Fatalf("refusal %v does not say how to override", err)
			}
			if got := call(`, older_than => TIMESTAMP '` + now + `', override_min_age => true, dry_run => true`); !slices.Equal(got, []string{fresh}) {
				t.Fatalf("down to now, listed %q, want only %q", got, fresh)
			}
			_, err = query(t, cnxn, `CALL system.remove_orphan_files(table => '`+name+`', location => '/etc', override_min_age => true, older_than => TIMESTAMP '`+now+`')`)
			wantStatus(t, err, adbc.StatusUnauthorized)
			_, err = tryUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE remove_orphan_files(retention_threshold => '0s')`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
			if n := execUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE remove_orphan_files(retention_threshold => '2d')`); n != 0 || !exists(fresh) {
				t.Fatalf("Trino's remove_orphan_files removed %d files", n)
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
		})
	}
}

// TestRewriteManifests merges a table's one-per-INSERT manifests into one
// (CALL and Trino's optimize_manifests) with the rows unchanged.
func TestRewriteManifests(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	manifests := func(name string) int {
		tbl := localTable(t, s, name)
		fsys, err := tbl.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		mans, err := tbl.CurrentSnapshot().Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return len(mans)
	}
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := "m" + l.name
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s WITH ('format-version' = '%s')`, name, maintCols, l.part, l.version))
			smallInserts(t, func(q string) int64 { return execUpdate(t, cnxn, q) }, name)
			want := mustQuery(t, cnxn, `SELECT * FROM `+name).sorted()
			before := manifests(name)
			if before < 10 {
				t.Fatalf("%d manifests to start with", before)
			}
			res := mustQuery(t, cnxn, `CALL system.rewrite_manifests('`+name+`')`)
			row := cellsOf(res.rows[0])
			if atoi(t, row[0]) != int64(before) || atoi(t, row[1]) != int64(manifests(name)) || manifests(name) >= before {
				t.Fatalf("result %q with %d manifests before and %d after", res.rows[0], before, manifests(name))
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			execUpdate(t, cnxn, `INSERT INTO `+name+` VALUES (1000, 1, 'x')`)
			if n := execUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE optimize_manifests`); n != 2 {
				t.Fatalf("optimize_manifests rewrote %d manifests, want 2", n)
			}
			if manifests(name) != 1 {
				t.Fatalf("%d manifests after optimize_manifests", manifests(name))
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, append(want, "1000 | 1 | x")...)
		})
	}
}

// TestTrinoOptimize: ALTER TABLE … EXECUTE optimize rewrites the small
// files of the partitions its WHERE picks (only those), then of all;
// EXECUTE expire_snapshots keeps the newest snapshot; the rows stay
// DuckDB's throughout.
func TestTrinoOptimize(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := newMaintTable(t, cnxn, "t", l, "")
			want := mustQuery(t, cnxn, `SELECT * FROM `+name).sorted()
			before, _ := liveDataFiles(t, localTable(t, s, name))
			if l.part != "" {
				n := execUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE optimize(file_size_threshold => '10MB') WHERE p = 1`)
				after, _ := liveDataFiles(t, localTable(t, s, name))
				if n != int64(len(before)/3) || len(after) != len(before)-int(n)+1 {
					t.Fatalf("optimize WHERE p = 1 rewrote %d of %d files, leaving %d", n, len(before), len(after))
				}
				for _, f := range after {
					if f.Partition()[1000] != int32(1) && f.Count() > 6 {
						t.Fatalf("a file of partition %v was rewritten", f.Partition())
					}
				}
				wantRows(t, cnxn, `SELECT * FROM `+name, want...)
				before = after
			}
			n := execUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE optimize`)
			after, deletes := liveDataFiles(t, localTable(t, s, name))
			parts := 1
			if l.part != "" {
				parts = 3
			}
			if len(after) != parts || deletes != 0 || n < int64(len(before)-parts) {
				t.Fatalf("optimize rewrote %d files: %d files (%d delete files) left of %d", n, len(after), deletes, len(before))
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			if n := execUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE expire_snapshots(retention_threshold => '0s')`); n == 0 {
				t.Fatal("expire_snapshots removed nothing")
			}
			if got := snapshotCount(t, localTable(t, s, name)); got != 1 {
				t.Fatalf("%d snapshots after expire_snapshots", got)
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			_, err := tryUpdate(t, cnxn, `ALTER TABLE `+name+` EXECUTE optimize(file_size_threshold => '12 parsecs')`)
			wantStatus(t, err, adbc.StatusInvalidArgument)
		})
	}
}

// TestRewritePositionDeleteFiles: seven single-row merge-on-read DELETEs
// leave seven position delete files; rewrite_position_delete_files merges
// them into one per partition in one replace commit, the rows stay
// DuckDB's (older snapshots too), and a second run with the default
// min-input-files finds nothing to do. On v3 the deletes are deletion
// vectors, which it leaves alone.
func TestRewritePositionDeleteFiles(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	ref := newRefTable(t, s)
	writes := func(exec func(string) int64, name string) {
		smallInserts(t, exec, name)
		for _, id := range []int{1, 8, 15, 22, 29, 36, 43} {
			exec(fmt.Sprintf(`DELETE FROM %s WHERE id = %d`, name, id))
		}
	}
	ref.exec(t, `CREATE TABLE r `+maintCols)
	writes(func(q string) int64 { return ref.exec(t, q) }, "r")
	want := ref.query(t, `SELECT * FROM r`)
	for _, l := range maintLayouts {
		t.Run(l.name, func(t *testing.T) {
			name := "pd" + l.name
			execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read')`, name, maintCols, l.part, l.version))
			writes(func(q string) int64 { return execUpdate(t, cnxn, q) }, name)
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			tbl := localTable(t, s, name)
			data, deletes := liveDataFiles(t, tbl)
			old, snaps := tbl.CurrentSnapshot().SnapshotID, snapshotCount(t, tbl)
			call := `CALL system.rewrite_position_delete_files(table => '` + name + `', options => map('min-input-files', '2'))`
			res := mustQuery(t, cnxn, call)
			if got := columnNames(res); !slices.Equal(got, []string{"rewritten_delete_files_count", "added_delete_files_count", "rewritten_bytes_count", "added_bytes_count"}) {
				t.Fatalf("result columns %q", got)
			}
			row := cellsOf(res.rows[0])
			if l.version == "3" {
				if res.rows[0] != "0 | 0 | 0 | 0" || snapshotCount(t, localTable(t, s, name)) != snaps {
					t.Fatalf("v3 (deletion vectors): %q", res.rows)
				}
				return
			}
			parts := 1
			if l.part != "" {
				parts = 3
			}
			if deletes != 7 || atoi(t, row[0]) != 7 || atoi(t, row[1]) != int64(parts) || atoi(t, row[2]) == 0 || atoi(t, row[3]) == 0 {
				t.Fatalf("result %q with %d delete files before: want 7 rewritten, %d added", res.rows[0], deletes, parts)
			}
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			tbl = localTable(t, s, name)
			after, deletesAfter := liveDataFiles(t, tbl)
			if len(after) != len(data) || deletesAfter != parts {
				t.Fatalf("after: %d data files (%d before), %d delete files, want %d", len(after), len(data), deletesAfter, parts)
			}
			if got := snapshotCount(t, tbl); got != snaps+1 || tbl.CurrentSnapshot().Summary.Operation != table.OpReplace {
				t.Fatalf("%d snapshots after %d, operation %s", got, snaps, tbl.CurrentSnapshot().Summary.Operation)
			}
			wantRows(t, cnxn, fmt.Sprintf(`SELECT count(*) FROM %s AT (VERSION => %d)`, name, old), strconv.Itoa(len(want)))
			if res := mustQuery(t, cnxn, `CALL system.rewrite_position_delete_files('`+name+`')`); res.rows[0] != "0 | 0 | 0 | 0" {
				t.Fatalf("second run: %q", res.rows)
			}
			// A compaction applies the merged files and drops them.
			mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => '`+name+`', options => map('rewrite-all', 'true'))`)
			wantRows(t, cnxn, `SELECT * FROM `+name, want...)
			if _, n := liveDataFiles(t, localTable(t, s, name)); n != 0 {
				t.Fatalf("%d delete files left after compacting every file", n)
			}
		})
	}
}
