package planner

import (
	"context"
	"fmt"
	"github.com/icefloe/icefloe/internal/parse"
	"strings"
	"testing"
)

// pruneFixture makes table p (a INT, b VARCHAR, c BIGINT, ts TIMESTAMP,
// d DATE, dec DECIMAL(10,2), f DOUBLE) through DDL.
func pruneFixture(t *testing.T) *Planner {
	t.Helper()
	p, _ := testPlanner(t, twoWorkers, 0)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	if _, err := execSQL(p, ctx, s, "CREATE TABLE p (a INTEGER, b VARCHAR, c BIGINT, ts TIMESTAMP, d DATE, dec DECIMAL(10,2), f DOUBLE)"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPruningPitfalls(t *testing.T) {
	p := pruneFixture(t)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	cases := []struct {
		where string
		want  string // substring of the pushed filter; "" = nothing pushed
	}{
		{"NOT (a > 5 AND length(b) = 1)", ""},
		{"a > 5 AND length(b) = 1", "a"},
		{"NOT (a > 5)", "LessThanEqual"}, // iceberg-go folds the NOT
		{"a > 5 OR length(b) = 1", ""},
		{"a > 5 OR a IS NULL", "IsNull"},
		{"CAST(c AS VARCHAR) = '10'", ""},
		{"c::INT = 1", ""},
		{`b LIKE 'a\_b%' ESCAPE '\'`, ""},
		{"b LIKE 'a_%'", ""},
		{"b LIKE 'ab%'", "StartsWith"},
		{"b LIKE '%ab'", ""},
		{"a = 1.5", ""},
		{"ts >= DATE '2024-01-01'", ""},
		{"ts >= TIMESTAMP '2024-01-01 10:00:00'", "ts"},
		{"d = DATE '2024-01-01'", "d"},
		{"a = NULL", ""},
		{"a NOT IN (1, NULL)", ""},
		{"a NOT IN (1, 2)", ""},
		{"a IN (1, 2)", "In"},
		{"a IS NULL", "IsNull"},
		{"f > 1", ""},
		{"dec > 1.5", ""},
		{"a BETWEEN 1 AND 3", "a"},
		{"5 < a", "a"},
	}
	for _, c := range cases {
		conn, err := p.opts.Engine.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.bind(ctx, conn, s, parse.Must("SELECT * FROM p WHERE "+c.where), true)
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		in := b.inputs[0]
		got := ""
		if in.filter != nil {
			got = fmt.Sprint(in.filter)
		}
		if c.want == "" && got != "" {
			t.Errorf("WHERE %s: pushed %s, want nothing", c.where, got)
		}
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("WHERE %s: pushed %q, want it to contain %q", c.where, got, c.want)
		}
	}
}

func TestPartitionPruningReadsMatchingFiles(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 0)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	for _, q := range []string{
		"CREATE TABLE ev (id BIGINT, country VARCHAR, ts TIMESTAMP) PARTITIONED BY (country, day(ts))",
		"INSERT INTO ev VALUES (1, 'DE', TIMESTAMP '2024-01-01 10:00:00'), (2, 'FR', TIMESTAMP '2024-01-01 11:00:00')",
		"INSERT INTO ev VALUES (3, 'DE', TIMESTAMP '2024-01-02 10:00:00'), (4, 'FR', TIMESTAMP '2024-01-02 11:00:00')",
		"INSERT INTO ev VALUES (5, 'DE', TIMESTAMP '2024-01-03 10:00:00'), (6, 'US', TIMESTAMP '2024-01-03 11:00:00')",
	} {
		if _, err := execSQL(p, ctx, s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cases := []struct {
		where string
		files string
	}{
		{"country = 'DE'", "3 of 6 files"},
		{"ts >= TIMESTAMP '2024-01-03 00:00:00'", "2 of 6 files"},
		{"country = 'FR' AND ts < TIMESTAMP '2024-01-02 00:00:00'", "1 of 6 files"},
		{"country = 'XX'", "0 of 6 files"},
		{"length(country) = 2", "6 of 6 files"},
	}
	for _, c := range cases {
		plan, err := planText(ctx, p, s, "SELECT id FROM ev WHERE "+c.where)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.Explain, c.files) {
			t.Errorf("WHERE %s: want %q in plan:\n%s", c.where, c.files, plan.Explain)
		}
	}
}

func TestColumnPruning(t *testing.T) {
	p := pruneFixture(t)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	if _, err := execSQL(p, ctx, s, "CREATE TABLE q (id BIGINT, a INTEGER, other VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		query string
		want  map[string]string // table → columns ("*" = all)
	}{
		{"SELECT a FROM p", map[string]string{"p": "a"}},
		{"SELECT count(*) FROM p", map[string]string{"p": "a"}},
		{"SELECT * FROM p", map[string]string{"p": "*"}},
		{"SELECT x.b FROM p AS x WHERE x.c > 1", map[string]string{"p": "b,c"}},
		{"SELECT a FROM p WHERE EXISTS (SELECT * FROM q WHERE q.id = p.c)", map[string]string{"p": "a,c", "q": "id,a"}}, // unqualified a may be q.a
		{"SELECT a FROM p WHERE EXISTS (SELECT q.* FROM q WHERE q.id = p.c)", map[string]string{"p": "*", "q": "*"}},
		{"SELECT q, count(*) FROM (SELECT b AS q FROM p) AS t GROUP BY q", map[string]string{"p": "b"}},
		{"SELECT p FROM p", map[string]string{"p": "*"}},
		{"SELECT a FROM p NATURAL JOIN q", map[string]string{"p": "*", "q": "*"}},
		{"SELECT p.a FROM p JOIN q USING (a)", map[string]string{"p": "a", "q": "a"}},
	}
	for _, c := range cases {
		conn, err := p.opts.Engine.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.bind(ctx, conn, s, parse.Must(c.query), true)
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		for _, in := range b.inputs {
			got := "*"
			if in.cols != nil {
				got = strings.Join(in.cols, ",")
			}
			if want := c.want[in.ref.Table]; got != want {
				t.Errorf("%s: %s reads %q, want %q", c.query, in.ref.Table, got, want)
			}
		}
	}
}
