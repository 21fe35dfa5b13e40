//go:build javaiceberg

package integration

// The Iceberg Java suite (integration/javaiceberg/run, which installs a
// JDK and the jars and sets ICEFLOE_ICEBERG_CP and ICEFLOE_EQDELETES_JAVA):
// EqDeletes.java writes tables with equality delete files the way Flink
// does, through the Iceberg Java API, into the cluster's catalog, and reads
// tables back with Iceberg Java's own reader.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icefloe/icefloe/cluster"
)

// javaTables are the tables EqDeletes.java writes.
var javaTables = []string{"eq_v2", "eq_v2p", "eq_v3"}

// eqQueries run on every read path; %[1]s is the table.
var eqQueries = []string{
	`SELECT * FROM %[1]s`,
	`SELECT count(*), sum(id), min(s), max(s) FROM %[1]s`,
	`SELECT p, count(*), sum(id) FROM %[1]s GROUP BY p`,
	`SELECT count(DISTINCT s) FROM %[1]s`,
	`SELECT * FROM %[1]s WHERE id BETWEEN 5 AND 12`,
	`SELECT * FROM %[1]s WHERE p = 2 AND id > 90`,
	`SELECT a.id, b.s FROM %[1]s a JOIN %[1]s b ON a.id = b.id + 1`,
	`SELECT id FROM %[1]s ORDER BY id DESC LIMIT 5`,
}

// java runs EqDeletes.java with args and returns its output lines.
func java(t *testing.T, args ...string) []string {
	t.Helper()
	cp, src := os.Getenv("ICEFLOE_ICEBERG_CP"), os.Getenv("ICEFLOE_EQDELETES_JAVA")
	if cp == "" || src == "" {
		t.Fatal("ICEFLOE_ICEBERG_CP and ICEFLOE_EQDELETES_JAVA are not set: run this suite through integration/javaiceberg/run")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("java", append([]string{"-cp", cp, src}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("java %v: %v\n%s", args, err, stderr.String())
	}
	return strings.Fields(stdout.String())
}

// javaRows reads tables with Iceberg Java (one JVM for all), as sorted
// "id | p | s" rows by table.
func javaRows(t *testing.T, dir string, tables ...string) map[string][]string {
	t.Helper()
	rows, _ := javaRead(t, dir, tables...)
	return rows
}

// javaRead reads tables ("table" for main, "table@ref" for a branch or
// tag) with Iceberg Java (one JVM for all): the sorted "id | p | s" rows
// and how many snapshots each table keeps, by argument.
func javaRead(t *testing.T, dir string, tables ...string) (rows map[string][]string, snapshots map[string]int) {
	t.Helper()
	rows, snapshots = map[string][]string{}, map[string]int{}
	args := append([]string{"read", filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse")}, tables...)
	for _, l := range java(t, args...) {
		name, row, _ := strings.Cut(l, "|")
		if n, ok := strings.CutPrefix(row, "snapshots|"); ok {
			snapshots[name] = int(atoi(t, n))
			continue
		}
		rows[name] = append(rows[name], strings.ReplaceAll(strings.ReplaceAll(row, "|", " | "), "null", "NULL"))
	}
	for _, r := range rows {
		slices.Sort(r)
	}
	return rows, snapshots
}

// eqDeleteFiles counts the equality delete files a scan of name applies.
func eqDeleteFiles(t *testing.T, s *cluster.Standalone, name string) int {
	t.Helper()
	tasks, err := localTable(t, s, name).Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		for _, f := range task.EqualityDeleteFiles {
			if f.ContentType() != iceberg.EntryContentEqDeletes {
				t.Fatalf("%s listed as an equality delete", f.FilePath())
			}
			seen[f.FilePath()] = true
		}
	}
	return len(seen)
}

// TestEqualityDeletesFromJava: tables whose equality delete files Iceberg
// Java wrote (by key, by another column, partition-scoped, one in the
// wrong partition, a key written again after its delete) read exactly as
// Iceberg Java reads them, through every strategy, on a cluster whose
// workers may read files with DuckDB's Parquet reader (files a delete
// applies to must not go to it; the others do) and on one that reads
// everything with iceberg-go; icefloe's compaction of such a table reads
// the same in Iceberg Java and leaves no equality delete behind.
func TestEqualityDeletesFromJava(t *testing.T) {
	dir := t.TempDir()
	direct := StartCluster(t, Workers(2), DataDir(dir))
	java(t, "write", filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse"))
	iceGo := StartCluster(t, Workers(2), DataDir(dir), IcebergGoReads())
	want := javaRows(t, dir, javaTables...)
	ref := newRefTable(t, direct)
	for _, name := range javaTables {
		if len(want[name]) != 115 {
			t.Fatalf("Iceberg Java reads %d rows of %s, want 115", len(want[name]), name)
		}
		ref.exec(t, `CREATE TABLE `+name+` `+maintCols)
		for _, r := range want[name] {
			f := strings.Split(r, " | ")
			ref.exec(t, fmt.Sprintf(`INSERT INTO %s VALUES (%s, %s, '%s')`, name, f[0], f[1], f[2]))
		}
	}
	for _, s := range []*cluster.Standalone{direct, iceGo} {
		cnxn := adbcConn(t, s.Addr())
		before := directScans(s)
		for _, name := range javaTables {
			if eqDeleteFiles(t, s, name) == 0 {
				t.Fatalf("%s has no equality deletes", name)
			}
			for _, q := range eqQueries {
				q = fmt.Sprintf(q, name)
				if got, exp := mustQuery(t, cnxn, q).sorted(), ref.query(t, q); !slices.Equal(got, exp) {
					t.Fatalf("direct=%v %s:\n got %q\nwant %q", s == direct, q, head(got), head(exp))
				}
			}
		}
		// eq_v2p's newer file in partition 3 has no delete that applies:
		// it is read with DuckDB's reader, the others are not.
		if n := directScans(s) - before; (s == direct) != (n > 0) {
			t.Fatalf("direct=%v: %d direct scans", s == direct, n)
		}
	}

	cnxn := adbcConn(t, direct.Addr())
	for _, name := range javaTables {
		res := mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => '`+name+`', options => map('rewrite-all', 'true'))`)
		if len(res.rows) != 1 || strings.HasPrefix(res.rows[0], "0 |") {
			t.Fatalf("compaction of %s: %q", name, res.rows)
		}
		if n := eqDeleteFiles(t, direct, name); n != 0 {
			t.Fatalf("%s: %d equality deletes left after compacting every file", name, n)
		}
		wantRows(t, cnxn, `SELECT * FROM `+name, want[name]...)
	}
	for name, got := range javaRows(t, dir, javaTables...) {
		if !slices.Equal(got, want[name]) {
			t.Fatalf("Iceberg Java reads %s after icefloe's compaction:\n got %q\nwant %q", name, head(got), head(want[name]))
		}
	}
}

// TestEqualityDeletesFromIcefloe: DELETE on a merge-on-read table with
// identifier fields and 'icefloe.delete-kind' = 'equality' writes
// equality delete files, which Iceberg Java applies as icefloe does; a
// key shared by a row the WHERE clause does not match makes the DELETE
// use positional deletes instead, and the rows stay right.
func TestEqualityDeletesFromIcefloe(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	var want, tables, vals []string
	for i := 1; i <= 40; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 's%d')", i, i%4, i))
		if i != 3 && i != 4 && i != 17 && i != 30 {
			want = append(want, fmt.Sprintf("%d | %d | s%d", i, i%4, i))
		}
	}
	for _, l := range maintLayouts {
		name := "mine_" + l.name
		execUpdate(t, cnxn, fmt.Sprintf(`CREATE TABLE %s %s %s WITH ('format-version' = '%s', 'write.delete.mode' = 'merge-on-read', 'icefloe.delete-kind' = 'equality')`, name, maintCols, l.part, l.version))
		execUpdate(t, cnxn, `ALTER TABLE `+name+` SET IDENTIFIER FIELDS id`)
		execUpdate(t, cnxn, `INSERT INTO `+name+` VALUES `+strings.Join(vals, ", "))
		if n := execUpdate(t, cnxn, `DELETE FROM `+name+` WHERE id IN (3, 4, 17) OR s = 's30'`); n != 4 {
			t.Fatalf("%s: DELETE counted %d rows, want 4", name, n)
		}
		eqFiles := eqDeleteFiles(t, s, name)
		if eqFiles == 0 {
			t.Fatalf("%s: DELETE wrote no equality delete", name)
		}
		wantRows(t, cnxn, `SELECT * FROM `+name, want...)
		execUpdate(t, cnxn, `INSERT INTO `+name+` VALUES (5, 9, 'dup')`)
		if n := execUpdate(t, cnxn, `DELETE FROM `+name+` WHERE id = 5 AND p = 9`); n != 1 {
			t.Fatalf("%s: DELETE of a shared key counted %d", name, n)
		}
		if eqDeleteFiles(t, s, name) != eqFiles {
			t.Fatalf("%s: a DELETE whose key another row shares wrote an equality delete", name)
		}
		wantRows(t, cnxn, `SELECT * FROM `+name, want...)
		tables = append(tables, name)
	}
	slices.Sort(want)
	for name, got := range javaRows(t, dir, tables...) {
		if !slices.Equal(got, want) {
			t.Fatalf("Iceberg Java reads %s:\n got %q\nwant %q", name, head(got), head(want))
		}
	}
}
