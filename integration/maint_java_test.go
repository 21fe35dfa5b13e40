//go:build javaiceberg

package integration

import (
	"slices"
	"strings"
	"testing"
)

// TestJavaReadsMaintained: tables icefloe compacted (after merge-on-read
// deletes), whose later position delete files it merged (v2), whose old
// snapshots it expired and that carry a tag and a
// branch icefloe wrote to (an INSERT and a DELETE, so a delete file or a
// deletion vector of icefloe's), v2 and v3, partitioned and not, read in
// Iceberg Java — the core Spark's Iceberg runtime plans with — exactly as
// icefloe reads them: main, the branch and the tag, with the snapshots
// icefloe kept.
func TestJavaReadsMaintained(t *testing.T) {
	dir := t.TempDir()
	s := StartCluster(t, Workers(2), DataDir(dir))
	cnxn := adbcConn(t, s.Addr())
	want := map[string][]string{}
	var args []string
	for _, l := range maintLayouts {
		name := newMaintTable(t, cnxn, "jm_", l, "")
		res := mustQuery(t, cnxn, `CALL system.rewrite_data_files(table => '`+name+`', options => map('min-input-files', '2'))`)
		if len(res.rows) != 1 || atoi(t, cellsOf(res.rows[0])[0]) == 0 {
			t.Fatalf("%s: compaction rewrote nothing: %q", name, res.rows)
		}
		// Two more deletes in one partition; on v2 their position delete
		// files are merged into one of icefloe's writing.
		execUpdate(t, cnxn, `DELETE FROM `+name+` WHERE id = 7`)
		execUpdate(t, cnxn, `DELETE FROM `+name+` WHERE id = 13`)
		if l.version == "2" {
			res := mustQuery(t, cnxn, `CALL system.rewrite_position_delete_files(table => '`+name+`', options => map('min-input-files', '2'))`)
			if !strings.HasPrefix(res.rows[0], "2 | 1 |") {
				t.Fatalf("%s: rewrite_position_delete_files: %q", name, res.rows)
			}
		}
		before := mustQuery(t, cnxn, `SELECT id, p, s FROM `+name).sorted()
		mustQuery(t, cnxn, `CALL system.expire_snapshots(table => '`+name+`', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`)
		execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE TAG kept`)
		execUpdate(t, cnxn, `ALTER TABLE `+name+` CREATE BRANCH dev`)
		execUpdate(t, cnxn, `INSERT INTO `+name+`.branch_dev VALUES (1000, 1, 'dev')`)
		if n := execUpdate(t, cnxn, `DELETE FROM `+name+`.branch_dev WHERE id = 4`); n != 1 {
			t.Fatalf("%s: DELETE on the branch counted %d rows", name, n)
		}
		dev := mustQuery(t, cnxn, `SELECT id, p, s FROM `+name+` FOR VERSION AS OF 'dev'`).sorted()
		if slices.Equal(dev, before) || !slices.Contains(dev, "1000 | 1 | dev") || slices.Contains(dev, "4 | 1 | s4") {
			t.Fatalf("%s: the branch reads %q", name, head(dev))
		}
		want[name], want[name+"@kept"], want[name+"@dev"] = before, before, dev
		if got := mustQuery(t, cnxn, `SELECT id, p, s FROM `+name).sorted(); !slices.Equal(got, before) {
			t.Fatalf("%s: main moved: %q", name, head(got))
		}
		args = append(args, name, name+"@kept", name+"@dev")
	}
	rows, snapshots := javaRead(t, dir, args...)
	for _, a := range args {
		if !slices.Equal(rows[a], want[a]) {
			t.Errorf("Iceberg Java reads %s:\n got %d rows %q\nwant %d rows %q", a, len(rows[a]), head(rows[a]), len(want[a]), head(want[a]))
		}
		// main's compacted head and the branch's two writes.
		if snapshots[a] != 3 {
			t.Errorf("Iceberg Java sees %d snapshots of %s, want 3", snapshots[a], a)
		}
	}
}
