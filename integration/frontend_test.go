package integration

import (
	"fmt"
	"testing"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/internal/sqltok"
)

// TestOneTokenizerRunPerStatement runs a statement of every kind the kind
// table lists through the Flight SQL surface (Go ADBC, an in-process
// cluster) and counts the tokenizer's runs for each: the front end
// tokenizes a statement once and everything after it — admission, audit,
// the query registry, the planner (EXPLAIN, CALL, SHOW, time travel, name
// resolution) and the statement executor — reads the parsed value. The
// few statements that hand icefloe other text to read say which.
func TestOneTokenizerRunPerStatement(t *testing.T) {
	s := StartCluster(t, Workers(2))
	cnxn := adbcConn(t, s.Addr())
	covered := map[parse.Kind]bool{}
	type step struct {
		q      string
		update bool
		runs   int64  // 0 means 1
		why    string // why a statement takes more than one run
	}
	run := func(st step) {
		t.Helper()
		p, err := parse.Parse(st.q) // before counting
		if err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
		covered[p.Kind] = true
		want := max(st.runs, 1)
		before := sqltok.Runs.Load()
		if st.update {
			execUpdate(t, cnxn, st.q)
		} else {
			mustQuery(t, cnxn, st.q)
		}
		if got := sqltok.Runs.Load() - before; got != want {
			t.Errorf("%s: %d tokenizer runs, want %d %s", st.q, got, want, st.why)
		}
	}
	for _, st := range []step{
		{q: "CREATE SCHEMA fe", update: true},
		{q: "USE local.fe", update: true}, // (the Go driver keeps no session cookie: the names below say fe)
		{q: "CREATE TABLE fe.t (id BIGINT, v BIGINT, l BIGINT[]) PARTITIONED BY (bucket(4, id)) WITH ('format-version' = '2')", update: true},
		{q: "INSERT INTO fe.t VALUES (1, 10, [1, 2]), (2, 20, [3]), (3, 30, NULL)", update: true},
		{q: "INSERT INTO fe.t SELECT id + 10, v, l FROM fe.t", update: true},
		{q: "SELECT 1"},
		{q: "SELECT * FROM fe.t WHERE id > 1 ORDER BY id"},
		{q: "SELECT count(*) FROM local.fe.t AS x JOIN fe.t AS y ON x.id = y.id"},
		{q: "SUMMARIZE fe.t"},
		{q: "EXPLAIN SELECT * FROM fe.t WHERE id = 2"},
		{q: "EXPLAIN ANALYZE SELECT count(*) FROM fe.t"},
		{q: "EXPLAIN UPDATE fe.t SET v = 0 WHERE id = 1"},
		{q: "SHOW TABLES FROM fe"},
		{q: "DESCRIBE fe.t"},
		{q: "SHOW CREATE TABLE fe.t"},
		{q: "UPDATE fe.t SET l = [7, 8], v = v + 1 WHERE id = 2", update: true},
		{q: "DELETE FROM fe.t WHERE id = 3", update: true},
		{q: "MERGE INTO fe.t USING (SELECT 1 AS id, 99 AS v) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)", update: true},
		{q: "CREATE TABLE fe.c AS SELECT id, v FROM fe.t", update: true},
		{q: "CREATE OR REPLACE TABLE fe.c AS SELECT id FROM fe.t", update: true},
		{q: "CREATE VIEW fe.w AS SELECT id FROM t WHERE v > 10", update: true},
		{q: "SELECT count(*) FROM fe.w", runs: 2, why: "(and one of the view's query, the first time a query reads it)"},
		{q: "SELECT max(id) FROM fe.w"},
		{q: "DROP VIEW fe.w", update: true},
		{q: "ALTER TABLE fe.t ADD COLUMN note VARCHAR", update: true},
		{q: "ALTER TABLE fe.t CREATE BRANCH b", update: true},
		{q: "ALTER TABLE fe.t EXECUTE expire_snapshots(retention_threshold => '7d')", update: true},
		{q: "CALL system.rewrite_manifests(table => 'fe.t')", runs: 2, why: "(and one of the table argument, a name written in a string)"},
		{q: "TRUNCATE fe.c", update: true},
		{q: "DROP TABLE fe.c", update: true},
	} {
		run(st)
	}
	// The UPDATE's SET list was cut as DuckDB cuts it: [7, 8] is one value.
	if got := mustQuery(t, cnxn, "SELECT list_sum(l), v FROM fe.t WHERE id = 2").rows; len(got) != 1 || got[0] != "15 | 21" {
		t.Errorf("after UPDATE … SET l = [7, 8], v = v + 1: %v, want 15 | 21", got)
	}
	// Time travel: the Iceberg spelling is rewritten from the same tokens.
	snaps := mustQuery(t, cnxn, `SELECT snapshot_id FROM fe."t$snapshots" ORDER BY committed_at LIMIT 1`)
	run(step{q: fmt.Sprintf("SELECT count(*) FROM fe.t FOR VERSION AS OF %s", snaps.rows[0])})
	run(step{q: "DROP SCHEMA fe CASCADE", update: true})
	for _, k := range parse.Kinds() {
		if !covered[k.Kind] {
			t.Errorf("no statement of kind %s was counted", k.Name)
		}
	}

	// A prepared statement with a parameter keeps its text in its
	// sealed handle: one parse to prepare it, one each time it runs.
	before := sqltok.Runs.Load()
	rows := preparedInt64(t, cnxn, "SELECT ? + 1 AS n", 41)
	if len(rows) != 1 || rows[0] != "42" {
		t.Fatalf("prepared query: %v", rows)
	}
	if got := sqltok.Runs.Load() - before; got != 2 {
		t.Errorf("prepared statement with a parameter: %d tokenizer runs, want 2 (prepare, execute)", got)
	}
}
