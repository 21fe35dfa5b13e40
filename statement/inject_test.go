package statement

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/planner"
)

// injectionSeparators end the client's part of a statement the ways
// DuckDB's lexer ends a token: every comment form (with each line
// ending), the quote forms, and the white space DuckDB has and has not.
var injectionSeparators = []string{
	" -- c\r", " -- c\r\n", " -- c\n", " --\r", " /* c */", " /* a /* b */ c */",
	"\f", "\v", "\u00a0", " ''", " E'\\''", " $$ $$", ` "x"`, "",
}

// injectionAttacks are what the separators were meant to smuggle in: a
// macro replacing a function every session uses, a file write into the
// spill folder, another database, another row.
func injectionAttacks(spill string) []string {
	return []string{
		"CREATE MACRO lower(x) AS 'pwned'",
		"CREATE OR REPLACE TEMP MACRO upper(x) AS 'pwned'",
		fmt.Sprintf("COPY (SELECT 1) TO '%s/pwn.csv'", spill),
		"ATTACH ':memory:' AS pwn",
		"INSERT INTO t VALUES (666, 'pwn')",
		"CREATE VIEW pwn AS SELECT 1",
	}
}

// injectionStatements puts payload (separator, ";", attack) into every
// statement kind at the place the client's text goes.
var injectionStatements = []string{
	"INSERT INTO t VALUES (1, 'a'%s); %s",
	"INSERT INTO t VALUES (1, 'a'%s), (2, 'b'); %s --",
	"INSERT INTO t (id%s) VALUES (1, 'a'); %s",
	"INSERT INTO t SELECT id, s FROM t%s; %s",
	"CREATE TABLE n1 (a INT%s); %s",
	"CREATE TABLE n2 (a INT%s, b INT); %s --)",
	"CREATE TABLE n3 AS SELECT 1 AS a%s; %s",
	"CREATE TABLE n4 (a INT) WITH ('k' = 'v'%s); %s",
	"UPDATE t SET s = 'x'%s; %s",
	"UPDATE t SET s = 'x' WHERE id = 1%s; %s",
	"DELETE FROM t WHERE id = 1%s; %s",
	"ALTER TABLE t ADD COLUMN c INT%s; %s",
	"ALTER TABLE t ALTER COLUMN id TYPE BIGINT%s; %s",
	"ALTER TABLE t SET TBLPROPERTIES ('k' = 'v'%s); %s",
	"CREATE SCHEMA s1%s; %s",
	"DROP TABLE IF EXISTS nope%s; %s",
}

// TestExecInjection runs every statement kind with every separator and
// attack, and checks that each fails as the client's mistake and that none
// of the attacks happened.
func TestExecInjection(t *testing.T) {
	e := newEnv(t)
	spill := filepath.Join(e.dir, "spill")
	e.exec(t, "CREATE TABLE t (id BIGINT, s VARCHAR)")
	e.exec(t, "INSERT INTO t VALUES (1, 'a')")
	ctx := context.Background()
	for _, stmt := range injectionStatements {
		for _, sep := range injectionSeparators {
			for _, attack := range injectionAttacks(spill) {
				q := fmt.Sprintf(stmt, sep, attack)
				_, err := run(ctx, e.x, e.sess, q)
				if !errors.Is(err, planner.ErrSyntax) && !errors.Is(err, planner.ErrInvalid) && !errors.Is(err, planner.ErrUnsupported) && !errors.Is(err, planner.ErrRefused) {
					t.Errorf("%q: got %v, want the statement refused", q, err)
				}
			}
		}
	}
	checkNoInjection(t, e, spill)
	if got := e.query(t, e.load(t, "default", "t"), "SELECT count(*) FROM t"); got[0] != "1" {
		t.Errorf("t has %s rows, want the 1 it had", got[0])
	}
	// Text inside quotes and comments is data and comments: the same
	// attacks inside a string literal are inserted as values.
	for i, attack := range injectionAttacks(spill) {
		v := "-- c\r; " + attack + " /*"
		e.exec(t, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s') -- %s", 10+i, strings.ReplaceAll(v, "'", "''"), attack))
		got := e.query(t, e.load(t, "default", "t"), fmt.Sprintf("SELECT s FROM t WHERE id = %d", 10+i))
		if len(got) != 1 || got[0] != v {
			t.Fatalf("string %q came back as %q", v, got)
		}
	}
	checkNoInjection(t, e, spill)
}

// checkNoInjection checks that DuckDB has no object a client made, no
// other database, and that nothing was written in the spill folder.
func checkNoInjection(t *testing.T, e *env, spill string) {
	t.Helper()
	ctx := context.Background()
	conn, err := e.eng.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var lower, upper string
	var fns, views, dbs int
	err = conn.DB().QueryRowContext(ctx, `SELECT lower('ABC'), upper('abc'),
		(SELECT count(*) FROM duckdb_functions() WHERE database_name <> 'system'),
		(SELECT count(*) FROM duckdb_views() WHERE database_name <> 'system'),
		(SELECT count(*) FROM duckdb_databases() WHERE database_name NOT IN ('memory', 'system', 'temp'))`).Scan(&lower, &upper, &fns, &views, &dbs)
	if err != nil {
		t.Fatal(err)
	}
	if lower != "abc" || upper != "ABC" || fns != 0 || views != 0 || dbs != 0 {
		t.Errorf("DuckDB changed: lower %q upper %q, %d functions, %d views, %d databases", lower, upper, fns, views, dbs)
	}
	_ = filepath.WalkDir(filepath.Dir(spill), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "pwn") {
			t.Errorf("an attack wrote %s", path)
		}
		return nil
	})
}
