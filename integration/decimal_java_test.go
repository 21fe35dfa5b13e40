//go:build javaiceberg

package integration

import (
	"slices"
	"testing"
)

// TestJavaReadsDecimalPartitions: tables partitioned by DECIMAL(p,0)
// columns (identity, and truncate of a DECIMAL(38,0)), written by INSERT …
// VALUES, INSERT … SELECT, a merge-on-read DELETE and a copy-on-write
// UPDATE, read in Iceberg Java exactly as icefloe reads them. (iceberg-go's
// manifests leave the decimal's scale out of their Avro schema; icefloe
// writes it, so pyiceberg reads them too: the interop suite's
// test_pyiceberg_reads_decimal_partitions.)
func TestJavaReadsDecimalPartitions(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Demo(), Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	want := map[string][]string{}
	var names []string
	for _, c := range []struct{ name, typ, part string }{
		{"jdec0", "DECIMAL(10,0)", "p"},
		{"jdec38", "DECIMAL(38,0)", "truncate(10, p)"},
	} {
		execUpdate(t, cnxn, `CREATE TABLE `+c.name+` (id BIGINT NOT NULL, p `+c.typ+`, s VARCHAR) PARTITIONED BY (`+c.part+`)
			WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'copy-on-write')`)
		execUpdate(t, cnxn, `INSERT INTO `+c.name+` VALUES (1, 5, 'a'), (2, NULL, 'b'), (3, -7, 'c'), (4, 99999999, 'd')`)
		execUpdate(t, cnxn, `INSERT INTO `+c.name+` SELECT id + 100, CAST(id % 20 - 10 AS `+c.typ+`), status FROM orders WHERE id <= 500`)
		if n := execUpdate(t, cnxn, `DELETE FROM `+c.name+` WHERE id = 150`); n != 1 {
			t.Fatalf("%s: DELETE counted %d rows", c.name, n)
		}
		execUpdate(t, cnxn, `UPDATE `+c.name+` SET s = 'updated' WHERE p = 5`)
		want[c.name] = mustQuery(t, cnxn, `SELECT id, p, s FROM `+c.name).sorted()
		if len(want[c.name]) != 503 {
			t.Fatalf("%s: icefloe reads %d rows, want 503", c.name, len(want[c.name]))
		}
		names = append(names, c.name)
	}
	rows := javaRows(t, dir, names...)
	for _, n := range names {
		if !slices.Equal(rows[n], want[n]) {
			t.Errorf("Iceberg Java reads %s:\n got %d rows %q\nwant %d rows %q", n, len(rows[n]), head(rows[n]), len(want[n]), head(want[n]))
		}
	}
}
