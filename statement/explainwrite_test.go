package statement

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/planner"
)

// TestExplainWritesChangeNothing: EXPLAIN of INSERT (VALUES and SELECT),
// UPDATE, DELETE (copy-on-write and merge-on-read) and CREATE TABLE … AS
// prints the write plan (files read, fragments, commit kind) and leaves
// every table at its snapshot, writes no file and creates no table.
func TestExplainWritesChangeNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE cow (id BIGINT, s VARCHAR)`)
	e.exec(t, `CREATE TABLE mor (id BIGINT, s VARCHAR) WITH ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')`)
	for _, n := range []string{"cow", "mor"} {
		e.exec(t, `INSERT INTO `+n+` VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
		e.exec(t, `INSERT INTO `+n+` VALUES (4, 'd')`)
	}
	snaps := map[string]int64{}
	for _, n := range []string{"cow", "mor"} {
		snaps[n] = e.load(t, "default", n).CurrentSnapshot().SnapshotID
	}
	files := countFiles(t, e.dir)
	for _, c := range []struct {
		q     string
		words []string
	}{
		{`EXPLAIN INSERT INTO cow VALUES (5, 'e')`, []string{"write\tthe coordinator writes the 1 rows of VALUES", "commit\tappend"}},
		{`EXPLAIN INSERT INTO cow SELECT id + 10, s FROM mor WHERE id > 1`, []string{"read strategy\t", "read files\tlocal.default.mor: 2 of 2 files", "write\t", "fragment 0\t", "commit\tappend"}},
		{`EXPLAIN UPDATE cow SET s = 'z' WHERE id = 4`, []string{"read\t1 of 2 data files of local.default.cow", "file\t", "write\t1 fragments", "commit\toverwrite (copy-on-write)"}},
		{`EXPLAIN DELETE FROM cow`, []string{"read\t2 of 2 data files", "commit\toverwrite (copy-on-write)"}},
		{`EXPLAIN DELETE FROM mor WHERE id < 3`, []string{"rows\t2 rows of local.default.mor match", "commit\tdelete (merge-on-read)"}},
		{`EXPLAIN DELETE FROM cow WHERE id > 100`, []string{"commit\tnone"}},
		{`EXPLAIN MERGE INTO cow USING (VALUES (4, 'x'), (9, 'y')) AS src(id, s) ON cow.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s WHEN NOT MATCHED THEN INSERT VALUES (src.id, src.s)`, []string{"data files of local.default.cow", "commit\t"}},
		{`EXPLAIN TRUNCATE TABLE mor`, []string{"rows\t4 rows of local.default.mor", "commit\tdelete: every live data and delete file"}},
		{`EXPLAIN CREATE TABLE made AS SELECT id, s FROM cow`, []string{"create\ttable local.default.made (\"id\" BIGINT, \"s\" VARCHAR)", "read strategy\t", "commit\tcreate the table, then append"}},
	} {
		plan, err := planText(ctx, e.x, e.sess, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		tk, err := e.key.Open(plan.Endpoints[0].Ticket, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out := explainText(t, e, tk.SQL)
		for _, w := range c.words {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the plan has no %q:\n%s", c.q, w, out)
			}
		}
	}
	for n, want := range snaps {
		if got := e.load(t, "default", n).CurrentSnapshot().SnapshotID; got != want {
			t.Errorf("EXPLAIN changed %s: snapshot %d, was %d", n, got, want)
		}
	}
	if got := countFiles(t, e.dir); got != files {
		t.Errorf("EXPLAIN wrote files: %d in the warehouse, were %d", got, files)
	}
	if ok, _ := e.cat.CheckTableExists(ctx, []string{"default", "made"}); ok {
		t.Error("EXPLAIN CREATE TABLE … AS created the table")
	}
	for _, q := range []string{`EXPLAIN CREATE TABLE plain (id BIGINT)`, `EXPLAIN DROP TABLE cow`, `EXPLAIN ALTER TABLE cow ADD COLUMN x INT`} {
		if _, err := planText(ctx, e.x, e.sess, q); err == nil {
			t.Errorf("%s: planned, want an error", q)
		} else if !errors.Is(err, planner.ErrUnsupported) && !errors.Is(err, planner.ErrSyntax) && !errors.Is(err, planner.ErrInvalid) {
			t.Errorf("%s: %v", q, err)
		}
	}
	if ok, _ := e.cat.CheckTableExists(ctx, []string{"default", "plain"}); ok {
		t.Error("EXPLAIN CREATE TABLE created the table")
	}
}

// explainText runs an EXPLAIN ticket's VALUES query and returns its
// rows as "item\tvalue" lines.
func explainText(t *testing.T, e *env, sql string) string {
	t.Helper()
	conn, err := e.eng.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.DB().QueryContext(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		b.WriteString(k + "\t" + v + "\n")
	}
	return b.String()
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) != ".db" && !strings.Contains(path, "spill") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteTargetsResolveAsWritten: an UPDATE, DELETE or MERGE whose
// target is written unquoted in another case resolves it as queries do
// (case-insensitively): the statements icefloe prints for it resolve
// names as the client wrote them, quoted or not.
func TestWriteTargetsResolveAsWritten(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE cased (id BIGINT, s VARCHAR)`)
	e.exec(t, `INSERT INTO cased VALUES (1, 'a'), (2, 'b')`)
	for _, q := range []string{
		`EXPLAIN UPDATE CASED SET s = 'z' WHERE id = 2`,
		`EXPLAIN DELETE FROM Cased WHERE id = 1`,
		`EXPLAIN DELETE FROM Cased`,
		`EXPLAIN TRUNCATE CASED`,
		`EXPLAIN MERGE INTO CaSeD USING (VALUES (2, 'x')) AS src(id, s) ON CaSeD.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s`,
	} {
		if _, err := planText(ctx, e.x, e.sess, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if _, err := planText(ctx, e.x, e.sess, `EXPLAIN UPDATE "CASED" SET s = 'z'`); !errors.Is(err, planner.ErrNotFound) {
		t.Errorf("a quoted name in another case: %v, want not found", err)
	}
}
