package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/cluster"
)

// dataDir is the cluster's data directory (the parent of its warehouse).
func dataDir(t testing.TB, s *cluster.Standalone) string {
	t.Helper()
	mt, err := s.Mounts.Get(catalog.LocalCatalogName)
	if err != nil {
		t.Fatal(err)
	}
	wh, ok := catalog.LocalPath(mt.Props["warehouse"])
	if !ok {
		t.Fatalf("warehouse %q is not local", mt.Props["warehouse"])
	}
	return filepath.Dir(wh)
}

// runADBC runs q on cnxn as an update or a query, plain or prepared (as
// JDBC and Python ADBC send every statement).
func runADBC(cnxn adbc.Connection, q string, update, prepared bool) error {
	ctx := context.Background()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return err
	}
	if prepared {
		if err := stmt.Prepare(ctx); err != nil {
			return err
		}
	}
	if update {
		_, err = stmt.ExecuteUpdate(ctx)
		return err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

// refusedCodes are how a refused statement may fail: the client's
// mistake, or something it may not do.
var refusedCodes = map[adbc.Status]bool{
	adbc.StatusInvalidArgument: true, adbc.StatusUnauthorized: true,
	adbc.StatusNotImplemented: true, adbc.StatusNotFound: true,
}

// TestInjectionThroughADBC sends the injection forms found against the
// coordinator — a -- comment ended by \r (or \r\n) or a /* */ comment in
// the client's part of each statement kind, followed by a macro replacing
// a function every session and the planner use, COPY into the spill
// folder, ATTACH, another INSERT — from one session, plain and prepared,
// and checks that each was refused and that another session sees nothing
// of them.
func TestInjectionThroughADBC(t *testing.T) {
	s := StartCluster(t, Workers(2))
	attacker, other := adbcConn(t, s.Addr()), adbcConn(t, s.Addr())
	execUpdate(t, other, "CREATE TABLE t (id BIGINT, s VARCHAR)")
	execUpdate(t, other, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	const probe = "SELECT lower('ABC') AS l, upper('abc') AS u, (SELECT count(*) FROM t) AS n, (SELECT string_agg(s, ',' ORDER BY id) FROM t) AS ss"
	before := mustQuery(t, other, probe)
	if got := strings.Join(before.rows, ";"); got != "abc | ABC | 2 | a,b" {
		t.Fatalf("probe before: %s", got)
	}
	dir := dataDir(t, s)
	spill := filepath.Join(dir, "spill", "coordinator")
	attacks := []string{
		"CREATE MACRO lower(x) AS 'pwned'",
		"CREATE OR REPLACE MACRO json_serialize_sql(x) AS '{}'",
		fmt.Sprintf("COPY (SELECT 1) TO '%s'", filepath.Join(spill, "pwn.csv")),
		"ATTACH ':memory:' AS pwn",
		"INSERT INTO t VALUES (666, 'pwn')",
	}
	statements := []struct {
		q      string
		update bool
	}{
		{"SELECT id FROM t WHERE id = 1%s; %s", false},
		{"INSERT INTO t VALUES (3, 'c'%s); %s", true},
		{"INSERT INTO t VALUES (3, 'c'%s), (4, 'd'); %s --", true},
		{"INSERT INTO t SELECT id, s FROM t%s; %s", true},
		{"CREATE TABLE n1 (a INT%s); %s --)", true},
		{"CREATE TABLE n2 AS SELECT 1 AS a%s; %s", true},
		{"UPDATE t SET s = 'x' WHERE id = 1%s; %s", true},
		{"DELETE FROM t WHERE id = 1%s; %s", true},
		{"ALTER TABLE t ADD COLUMN c INT%s; %s", true},
	}
	for _, st := range statements {
		for _, sep := range []string{" -- c\r", " -- c\r\n", " /* c */"} {
			for _, attack := range attacks {
				q := fmt.Sprintf(st.q, sep, attack)
				for _, prepared := range []bool{false, true} {
					err := runADBC(attacker, q, st.update, prepared)
					var ae adbc.Error
					if !errors.As(err, &ae) || !refusedCodes[ae.Code] {
						t.Errorf("%q (prepared %v): got %v, want it refused", q, prepared, err)
					}
				}
			}
		}
	}
	after := mustQuery(t, other, probe)
	if got, want := strings.Join(after.rows, ";"), strings.Join(before.rows, ";"); got != want {
		t.Errorf("another session's answer changed: %s, was %s", got, want)
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "pwn") {
			t.Errorf("an attack wrote %s", path)
		}
		return nil
	})
}

// TestDuckDBCatalogThroughADBC: DuckDB's own catalog views, table
// functions and state are out of reach, named in the error.
func TestDuckDBCatalogThroughADBC(t *testing.T) {
	s := StartCluster(t, Workers(1))
	cnxn := adbcConn(t, s.Addr())
	execUpdate(t, cnxn, "CREATE TABLE t (id BIGINT)")
	for _, c := range []struct {
		q    string
		code adbc.Status
		word string
	}{
		{"SELECT * FROM pg_settings", adbc.StatusNotFound, "pg_settings"},
		{"SELECT * FROM duckdb_columns()", adbc.StatusUnauthorized, "duckdb_columns"},
		{"SELECT * FROM duckdb_settings()", adbc.StatusUnauthorized, "duckdb_settings"},
		// icefloe answers information_schema.schemata, tables and columns
		// itself (sqlsurface_test.go); DuckDB's other views stay out of reach.
		{"SELECT * FROM information_schema.key_column_usage", adbc.StatusUnauthorized, "information_schema.key_column_usage"},
		{"SELECT * FROM pg_catalog.pg_class", adbc.StatusUnauthorized, "pg_catalog.pg_class"},
		{"SELECT current_setting('temp_directory')", adbc.StatusUnauthorized, "current_setting"},
		{"SELECT id FROM t WHERE current_setting('memory_limit') IS NOT NULL", adbc.StatusUnauthorized, "current_setting"},
		{"WITH a AS (SELECT * FROM pg_settings), pg_settings AS (SELECT 1 AS z) SELECT * FROM a", adbc.StatusNotFound, "pg_settings"},
		{"SELECT * FROM (WITH duckdb_tables AS (SELECT 1 AS z) SELECT * FROM duckdb_tables), duckdb_tables", adbc.StatusNotFound, "duckdb_tables"},
		{"INSERT INTO t VALUES (length(current_setting('temp_directory')))", adbc.StatusUnauthorized, "current_setting"},
		{"UPDATE t SET id = length(current_query())", adbc.StatusUnauthorized, "current_query"},
	} {
		err := runADBC(cnxn, c.q, strings.HasPrefix(c.q, "INSERT") || strings.HasPrefix(c.q, "UPDATE"), true)
		var ae adbc.Error
		if !errors.As(err, &ae) || ae.Code != c.code || !strings.Contains(err.Error(), c.word) {
			t.Errorf("%s: got %v, want status %d naming %s", c.q, err, c.code, c.word)
		}
	}
}
