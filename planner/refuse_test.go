package planner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/engine"
)

// TestDuckDBCatalogUnreachable: no query reaches DuckDB's own catalog
// views and table functions, its state-reading functions, or its catalog
// through a CTE name used outside the CTE's scope.
func TestDuckDBCatalogUnreachable(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	cases := []struct {
		q    string
		want error
		word string // the message names the object
	}{
		{"SELECT * FROM pg_settings", ErrNotFound, "pg_settings"},
		{"SELECT * FROM duckdb_columns", ErrNotFound, "duckdb_columns"},
		{"SELECT * FROM sqlite_master", ErrNotFound, "sqlite_master"},
		{"SELECT * FROM duckdb_settings()", ErrRefused, "duckdb_settings"},
		{"SELECT * FROM duckdb_columns()", ErrRefused, "duckdb_columns"},
		{"SELECT * FROM information_schema.views", ErrRefused, "information_schema.views"},
		{"SELECT * FROM information_schema.duckdb_columns", ErrRefused, "information_schema.duckdb_columns"},
		{"SELECT * FROM system.information_schema.columns", ErrNotFound, "system"},
		{"SELECT * FROM memory.information_schema.tables", ErrNotFound, "memory"},
		{"SELECT * FROM pg_catalog.pg_settings", ErrRefused, "pg_catalog.pg_settings"},
		{"SELECT * FROM memory.main.duckdb_views", ErrNotFound, "memory"},
		{"SELECT current_setting('memory_limit')", ErrRefused, "current_setting"},
		{"SELECT id FROM t WHERE s = current_setting('temp_directory')", ErrRefused, "current_setting"},
		{"SELECT pg_catalog.current_setting('memory_limit')", ErrRefused, "current_setting"},
		{"SELECT main.current_setting('memory_limit')", ErrRefused, "current_setting"},
		{"SELECT getvariable('x'), 1", ErrRefused, "getvariable"},
		{"SELECT current_query()", ErrRefused, "current_query"},
		{"SELECT current_schemas(true)", ErrRefused, "current_schemas"},
		{"SELECT pg_get_viewdef(1)", ErrRefused, "pg_get_viewdef"},
		{"SELECT has_table_privilege('t', 'select')", ErrRefused, "has_table_privilege"},
		{"SELECT json_serialize_plan('SELECT * FROM pg_settings')", ErrRefused, "json_serialize_plan"},
		{"SELECT count(*) OVER (), write_log('x') FROM t", ErrRefused, "write_log"},
		// A CTE named like a catalog view is in scope only where DuckDB
		// sees it: elsewhere the name is a table of the mounted catalog.
		{"WITH a AS (SELECT * FROM pg_settings), pg_settings AS (SELECT 1 AS z) SELECT * FROM a", ErrNotFound, "pg_settings"},
		{"SELECT * FROM (WITH pg_settings AS (SELECT 1 AS z) SELECT * FROM pg_settings) x, pg_settings", ErrNotFound, "pg_settings"},
		{"SELECT (WITH duckdb_tables AS (SELECT 1 AS z) SELECT z FROM duckdb_tables), * FROM duckdb_tables", ErrNotFound, "duckdb_tables"},
		{"WITH pg_settings AS (SELECT * FROM pg_settings) SELECT * FROM pg_settings", ErrNotFound, "pg_settings"},
		{"SELECT * FROM t UNION ALL (WITH pg_tables AS (SELECT 1, 'x') SELECT * FROM pg_tables) UNION ALL SELECT * FROM pg_tables", ErrNotFound, "pg_tables"},
	}
	for _, c := range cases {
		_, err := planText(ctx, p, s, c.q)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.word) {
			t.Errorf("%s: got %v, want %v naming %s", c.q, err, c.want, c.word)
		}
	}
	// CTEs still work wherever they are in scope.
	for _, q := range []string{
		"WITH pg_settings AS (SELECT 1 AS z) SELECT * FROM pg_settings",
		"WITH c AS (SELECT id FROM t) SELECT c.id FROM c WHERE c.id IN (SELECT id FROM c)",
		"WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM b, a",
		"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
		"WITH c AS (SELECT 1 AS x) SELECT * FROM c UNION ALL SELECT * FROM c",
		"SELECT * FROM (WITH t AS (SELECT 7 AS id) SELECT id FROM t) x, t",
	} {
		if _, err := planText(ctx, p, s, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// TestDeniedFunctionsCoverDuckDB: every function of DuckDB's pg_catalog
// schema, and every function of its main schema that reads the session,
// is refused; an upgrade that adds one fails here.
func TestDeniedFunctionsCoverDuckDB(t *testing.T) {
	ctx := context.Background()
	conn := testConn(t)
	rows, err := conn.DB().QueryContext(ctx, `SELECT DISTINCT function_name FROM duckdb_functions()
		WHERE function_type IN ('scalar', 'macro', 'aggregate')
		AND (schema_name = 'pg_catalog' OR function_name SIMILAR TO '(current|session|pg|has|inet|txid)_.*'
		     OR function_name IN ('getvariable', 'user', 'currval', 'nextval', 'write_log', 'json_serialize_plan'))`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	allowed := map[string]bool{ // the date and time of the statement, read from no state
		"current_date": true, "current_localtime": true, "current_localtimestamp": true,
		"current_time": true, "current_timestamp": true,
	}
	n := 0
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		n++
		if !allowed[name] && !deniedFunction(name) {
			t.Errorf("DuckDB's %s is not refused", name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Fatalf("only %d functions listed; the query no longer finds DuckDB's catalog functions", n)
	}
}

// testConn is a connection to a fresh engine, closed with the test.
func testConn(t *testing.T) *engine.Conn {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "256MB", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	conn, err := eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
