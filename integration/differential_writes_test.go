package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeStep is one statement of corpus/writes: its SQL and the table
// whose rows are compared after it.
type writeStep struct {
	table, sql, pos string
}

// loadWriteSteps reads the `statement <table>` blocks of dir/*.txt, in
// file and then text order.
func loadWriteSteps(t testing.TB, dir string) []writeStep {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no write statements in %s: %v", dir, err)
	}
	var steps []writeStep
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur *writeStep
		var sql []string
		flush := func() {
			if cur != nil {
				if len(sql) == 0 {
					t.Fatalf("%s: statement without SQL", cur.pos)
				}
				cur.sql = strings.Join(sql, "\n")
				steps = append(steps, *cur)
			}
			cur, sql = nil, nil
		}
		for i, text := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(text)
			switch {
			case cur != nil && trimmed != "":
				sql = append(sql, text)
			case trimmed == "":
				flush()
			case strings.HasPrefix(trimmed, "#"):
			case strings.HasPrefix(trimmed, "statement "):
				fields := strings.Fields(trimmed)
				if len(fields) != 2 {
					t.Fatalf("%s:%d: want `statement <table>`, got %q", f, i+1, text)
				}
				cur = &writeStep{table: fields[1], pos: fmt.Sprintf("%s:%d", filepath.Base(f), i+1)}
			default:
				t.Fatalf("%s:%d: unexpected line %q", f, i+1, text)
			}
		}
		flush()
	}
	return steps
}

// TestDifferentialWriteStatements runs the statements of corpus/writes
// (MERGE, TRUNCATE, CREATE OR REPLACE TABLE, …) on the harness's tables
// through a 2-worker cluster and on single-node DuckDB holding the same
// rows; after each one the update counts and the table's rows must agree.
func TestDifferentialWriteStatements(t *testing.T) {
	steps := loadWriteSteps(t, filepath.Join(corpusDir, "writes"))
	env := startDiffEnv(t, []int{2}, []bool{false})
	cfg := env.configs[0]
	travels := 0
	for i, st := range steps {
		// The rows and snapshot before the statement, read back after it
		// through each time-travel spelling (Trino's, Spark's, DuckDB's).
		q := "SELECT * FROM " + st.table
		before, berr := runReference(env.ref, q)
		snap := localTable(t, env.s, st.table).CurrentSnapshot()
		// The reference holds the tables as temp tables, which a table of
		// the same name in main would not replace.
		refSQL := strings.Replace(st.sql, "CREATE OR REPLACE TABLE", "CREATE OR REPLACE TEMP TABLE", 1)
		r, rerr := env.ref.DB().ExecContext(context.Background(), refSQL)
		n, err := tryUpdate(t, cfg.cnxn, st.sql)
		switch {
		case rerr != nil && err != nil:
			continue
		case rerr != nil:
			t.Fatalf("%s: DuckDB failed (%v), the cluster counted %d:\n%s", st.pos, rerr, n, st.sql)
		case err != nil:
			t.Fatalf("%s: %v\n%s", st.pos, err, st.sql)
		}
		// DuckDB counts no rows for CREATE … AS; icefloe counts those it wrote.
		if want, _ := r.RowsAffected(); n != want && !strings.HasPrefix(refSQL, "CREATE") {
			t.Errorf("%s: count %d, DuckDB %d\n%s", st.pos, n, want, st.sql)
		}
		want, werr := runReference(env.ref, q)
		if d := cfg.check(q, false, want, werr); d != "" {
			t.Errorf("%s: after\n%s\n%s", st.pos, st.sql, d)
		}
		// A replace with a new definition makes a new table, without the
		// old one's history.
		if snap == nil || berr != nil || localTable(t, env.s, st.table).SnapshotByID(snap.SnapshotID) == nil {
			continue
		}
		at := time.UnixMilli(snap.TimestampMs).UTC().Format("2006-01-02 15:04:05.000")
		spellings := []string{
			fmt.Sprintf("FOR VERSION AS OF %d", snap.SnapshotID),
			fmt.Sprintf("VERSION AS OF %d", snap.SnapshotID),
			fmt.Sprintf("FOR SYSTEM_VERSION AS OF %d", snap.SnapshotID),
			fmt.Sprintf("FOR TIMESTAMP AS OF TIMESTAMP '%s'", at),
			fmt.Sprintf("TIMESTAMP AS OF TIMESTAMP '%s'", at),
			fmt.Sprintf("AT (VERSION => %d)", snap.SnapshotID),
		}
		tq := q + " " + spellings[i%len(spellings)]
		if d := cfg.check(tq, false, before, nil); d != "" {
			t.Errorf("%s: the table before\n%s\nread back with %s:\n%s", st.pos, st.sql, tq, d)
		}
		travels++
	}
	if travels < len(steps)/2 {
		t.Errorf("only %d of %d statements were read back through time travel", travels, len(steps))
	}
	t.Logf("%d write statements, %d read back through time travel", len(steps), travels)
}
