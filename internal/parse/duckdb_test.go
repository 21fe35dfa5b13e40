package parse

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// The typed values against DuckDB's own parser: a statement both
// grammars know runs on one DuckDB as written and on another as printed
// back from its typed value (duckSQL); both databases must end up the
// same, table by table and row by row. Where the two parsers cut a
// statement differently (the SET list of UPDATE [1, 2], MERGE's clauses,
// the query of INSERT, an expression with a comma inside brackets), the
// printed statement changes other rows or columns than the original.

const duckFixture = `
CREATE SCHEMA s;
CREATE TABLE t (id INTEGER, v INTEGER, l INTEGER[], st STRUCT(a INTEGER, b INTEGER), name VARCHAR NOT NULL);
INSERT INTO t VALUES (1, 10, [1, 2], {'a': 1, 'b': 2}, 'one'), (2, 20, [3], {'a': 3, 'b': 4}, 'two'), (3, NULL, NULL, NULL, 'three');
CREATE TABLE s.u (id INTEGER, v INTEGER);
INSERT INTO s.u VALUES (1, 100), (4, 400);
`

func TestTypedValuesAgainstDuckDB(t *testing.T) {
	for _, q := range []string{
		"CREATE SCHEMA IF NOT EXISTS s2",
		"CREATE SCHEMA IF NOT EXISTS s",
		"DROP SCHEMA s CASCADE",
		"DROP SCHEMA IF EXISTS nope",
		`CREATE TABLE IF NOT EXISTS s.n (a DECIMAL(10, 2) NOT NULL, "B" VARCHAR, c INTEGER[])`,
		"CREATE TABLE n AS SELECT id, v * 2 AS w FROM t WHERE id > 1",
		"CREATE TABLE n AS (SELECT 1 AS a UNION ALL SELECT 2)",
		"DROP TABLE IF EXISTS s.u",
		"DROP TABLE t",
		"CREATE VIEW w AS SELECT id, l FROM t",
		"CREATE OR REPLACE VIEW s.w AS WITH x AS (SELECT 1 AS a) SELECT * FROM x",
		"INSERT INTO t VALUES (9, 90, [9, 9], {'a': 9, 'b': 9}, 'nine')",
		"INSERT INTO t (id, name) VALUES (5, 'five'), (6, 'six')",
		"INSERT INTO t (id, name, l) SELECT id, 'u' || v, [v, v] FROM s.u",
		"INSERT INTO s.u (SELECT id + 10, v FROM s.u) UNION ALL (SELECT 99, 99)",
		"INSERT INTO s.u WITH x AS (SELECT 7 AS a) SELECT a, a FROM x",
		"UPDATE t SET l = [1, 2], v = 5 WHERE id = 1",
		"UPDATE t SET st = {'a': 7, 'b': 8}, name = 'x' || name",
		"UPDATE t SET v = CASE WHEN id IN (1, 2) THEN list_extract([10, 20], id) ELSE 0 END, name = upper(name) WHERE v IS NOT NULL OR id = 3",
		"UPDATE s.u SET v = (SELECT max(v) FROM t)",
		"DELETE FROM t WHERE id IN (1, 3)",
		"DELETE FROM s.u",
		"DELETE FROM t WHERE list_contains(l, 3) AND name <> 'x, y'",
		"TRUNCATE t",
		"TRUNCATE TABLE s.u",
		"MERGE INTO t USING s.u ON t.id = u.id WHEN MATCHED THEN UPDATE SET v = u.v, l = [u.v, u.id] WHEN NOT MATCHED THEN INSERT (id, v, name) VALUES (u.id, u.v, 'new')",
		"MERGE INTO t AS x USING (SELECT * FROM s.u) AS y ON x.id = y.id WHEN MATCHED AND y.v > 150 THEN DELETE WHEN MATCHED THEN UPDATE SET v = CASE WHEN y.v > 1 THEN 1 ELSE 2 END WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0",
		"MERGE INTO s.u USING t ON u.id = t.id WHEN NOT MATCHED THEN INSERT VALUES (t.id, coalesce(t.v, -1)) WHEN MATCHED THEN DO NOTHING",
		"ALTER TABLE t ADD COLUMN IF NOT EXISTS d DECIMAL(10, 2)",
		"ALTER TABLE t ADD COLUMN e INTEGER[]",
		"ALTER TABLE t DROP COLUMN IF EXISTS st",
		"ALTER TABLE t DROP l",
		"ALTER TABLE t RENAME COLUMN v TO w",
		"ALTER TABLE t ALTER COLUMN v SET DATA TYPE BIGINT",
		"ALTER TABLE t ALTER v TYPE DECIMAL(18, 3)",
		"ALTER TABLE t ALTER name DROP NOT NULL",
		"ALTER TABLE s.u RENAME TO u2",
		"ALTER TABLE IF EXISTS nope RENAME TO x",
	} {
		st, err := Parse(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		printed := duckSQL(t, st)
		a, b := duckState(t, q), duckState(t, printed)
		if a != b {
			t.Errorf("%s\nprinted from the typed value as\n%s\nDuckDB after the statement:\n%s\nafter the printed one:\n%s", q, printed, a, b)
		}
	}
}

// duckState runs the fixture and q on a new DuckDB and dumps its tables.
func duckState(t *testing.T, q string) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, f := range strings.Split(duckFixture, ";") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		if _, err := db.Exec(f); err != nil {
			t.Fatalf("fixture %s: %v", f, err)
		}
	}
	if _, err := db.Exec(q); err != nil {
		return "error: " + err.Error()
	}
	var out strings.Builder
	rows, err := db.Query(`SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	type tbl struct{ schema, name, kind string }
	var tables []tbl
	for rows.Next() {
		var x tbl
		if err := rows.Scan(&x.schema, &x.name, &x.kind); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, x)
	}
	rows.Close()
	for _, x := range tables {
		fmt.Fprintf(&out, "%s.%s (%s):", x.schema, x.name, x.kind)
		cols, err := db.Query(`SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`, x.schema, x.name)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var n, ty, null string
			if err := cols.Scan(&n, &ty, &null); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, " %s %s %s,", n, ty, null)
		}
		cols.Close()
		var dump sql.NullString
		if err := db.QueryRow(fmt.Sprintf(`SELECT string_agg(r::VARCHAR, '; ' ORDER BY r::VARCHAR) FROM (SELECT * FROM "%s"."%s") AS r`, x.schema, x.name)).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "\n  %s\n", dump.String)
	}
	return out.String()
}

// duckSQL prints st back as DuckDB SQL from its typed value: names
// quoted, expressions as the parser cut them, each in parentheses.
func duckSQL(t *testing.T, st *Statement) string {
	t.Helper()
	name := func(parts []string) string {
		q := make([]string, len(parts))
		for i, p := range parts {
			q[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
		}
		return strings.Join(q, ".")
	}
	ifx := func(b bool, s string) string {
		if b {
			return s
		}
		return ""
	}
	where := func(w string) string { return ifx(w != "", " WHERE ("+w+")") }
	switch b := st.Body.(type) {
	case *CreateSchema:
		return "CREATE SCHEMA " + ifx(b.IfNotExists, "IF NOT EXISTS ") + name(b.Name)
	case *DropSchema:
		return "DROP SCHEMA " + ifx(b.IfExists, "IF EXISTS ") + name(b.Name) + ifx(b.Cascade, " CASCADE")
	case *CreateTable:
		if b.As != nil {
			return "CREATE TABLE " + ifx(b.IfNotExists, "IF NOT EXISTS ") + name(b.Name) + " AS " + b.As.Query().Duck
		}
		return "CREATE TABLE " + ifx(b.IfNotExists, "IF NOT EXISTS ") + name(b.Name) + " " + b.Columns
	case *DropTable:
		return "DROP TABLE " + ifx(b.IfExists, "IF EXISTS ") + name(b.Name)
	case *CreateView:
		return "CREATE " + ifx(b.OrReplace, "OR REPLACE ") + "VIEW " + name(b.Name) + " AS " + b.Query.Query().Duck
	case *Insert:
		cols := ""
		if b.Columns != nil {
			cols = " (" + name(b.Columns[:1])
			for _, c := range b.Columns[1:] {
				cols += ", " + name([]string{c})
			}
			cols += ")"
		}
		if b.Query != nil {
			return "INSERT INTO " + name(b.Name) + cols + " " + b.Query.Query().Duck
		}
		return "INSERT INTO " + name(b.Name) + cols + " " + b.Values
	case *Update:
		var set []string
		for _, s := range b.Set {
			set = append(set, name([]string{s.Column})+" = ("+s.Expr+")")
		}
		return "UPDATE " + name(b.Name) + " SET " + strings.Join(set, ", ") + where(b.Where)
	case *Delete:
		return "DELETE FROM " + name(b.Name) + where(b.Where)
	case *Truncate:
		return "TRUNCATE " + name(b.Name)
	case *Merge:
		return duckMerge(b, name, ifx)
	case *AlterTable:
		if out := duckAlter(b, name, ifx); out != "" {
			return out
		}
	}
	t.Fatalf("%s: no DuckDB form for %T", st.Text, st.Body)
	return ""
}

// duckMerge prints a MERGE from its typed value.
func duckMerge(b *Merge, name func([]string) string, ifx func(bool, string) string) string {
	out := "MERGE INTO " + name(b.Target) + ifx(b.Alias != "", " AS "+name([]string{b.Alias})) + " USING " + b.Source + " ON (" + b.Exprs[b.On] + ")"
	for _, c := range b.Clauses {
		out += [...]string{" WHEN MATCHED", " WHEN NOT MATCHED", " WHEN NOT MATCHED BY SOURCE"}[c.When]
		if c.Cond >= 0 {
			out += " AND (" + b.Exprs[c.Cond] + ")"
		}
		out += " THEN "
		switch {
		case c.Action == "NOTHING":
			out += "DO NOTHING"
		case c.Action == "DELETE":
			out += "DELETE"
		case c.Star:
			out += c.Action + " *"
		case c.Action == "UPDATE":
			var set []string
			for i, col := range c.Cols {
				set = append(set, name([]string{col})+" = ("+b.Exprs[c.Exprs[i]]+")")
			}
			out += "UPDATE SET " + strings.Join(set, ", ")
		default:
			var vals []string
			for _, e := range c.Exprs {
				vals = append(vals, "("+b.Exprs[e]+")")
			}
			cols := ""
			if len(c.Cols) > 0 {
				var q []string
				for _, col := range c.Cols {
					q = append(q, name([]string{col}))
				}
				cols = "(" + strings.Join(q, ", ") + ") "
			}
			out += "INSERT " + cols + "VALUES (" + strings.Join(vals, ", ") + ")"
		}
	}
	return out
}

// duckAlter prints the ALTER TABLE actions DuckDB also has ("" for others).
func duckAlter(b *AlterTable, name func([]string) string, ifx func(bool, string) string) string {
	head := "ALTER TABLE " + ifx(b.IfExists, "IF EXISTS ") + name(b.Name) + " "
	switch a := b.Action.(type) {
	case *AddColumn:
		return head + "ADD COLUMN " + ifx(a.IfNotExists, "IF NOT EXISTS ") + a.Def
	case *DropColumn:
		return head + "DROP COLUMN " + ifx(a.IfExists, "IF EXISTS ") + name([]string{a.Column})
	case *RenameColumn:
		return head + "RENAME COLUMN " + name([]string{a.From}) + " TO " + name([]string{a.To})
	case *SetColumnType:
		return head + "ALTER COLUMN " + name([]string{a.Column}) + " TYPE " + a.Type
	case *DropNotNull:
		return head + "ALTER COLUMN " + name([]string{a.Column}) + " DROP NOT NULL"
	case *RenameTable:
		return head + "RENAME TO " + name(a.To[len(a.To)-1:])
	}
	return ""
}
