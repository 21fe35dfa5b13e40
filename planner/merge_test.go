package planner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestMergeParts(t *testing.T) {
	ps, err := ParseUpdate(`MERGE INTO db.t AS x USING (SELECT a, b FROM s WHERE c ON d) AS y ON x.a = y.a AND CASE WHEN y.b THEN true END
		WHEN MATCHED AND y.b > (1) THEN UPDATE SET b = CASE WHEN y.b THEN 1 ELSE 2 END, c = 3
		WHEN NOT MATCHED BY SOURCE THEN DELETE
		WHEN NOT MATCHED AND y.a IS NOT NULL THEN INSERT (a, b) VALUES (y.a, (y.b, 1))
		WHEN NOT MATCHED BY TARGET THEN DO NOTHING`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ps.mergeParts()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.parts, ".") != "db.t" || m.alias != "x" || m.source != "(SELECT a, b FROM s WHERE c ON d) AS y" {
		t.Fatalf("target %v alias %q source %q", m.parts, m.alias, m.source)
	}
	if got := m.exprs[m.on]; got != "x.a = y.a AND CASE WHEN y.b THEN true END" {
		t.Fatalf("ON %q", got)
	}
	if len(m.clauses) != 4 {
		t.Fatalf("%d clauses", len(m.clauses))
	}
	c := m.clauses[0]
	if c.kind != whenMatched || c.action != "UPDATE" || m.exprs[c.cond] != "y.b > (1)" ||
		strings.Join(c.cols, ",") != "b,c" || m.exprs[c.exprs[0]] != "CASE WHEN y.b THEN 1 ELSE 2 END" || m.exprs[c.exprs[1]] != "3" {
		t.Fatalf("clause 1: %+v", c)
	}
	if c := m.clauses[1]; c.kind != whenNotMatchedBySource || c.action != "DELETE" || c.cond != -1 {
		t.Fatalf("clause 2: %+v", c)
	}
	if c := m.clauses[2]; c.kind != whenNotMatched || c.action != "INSERT" || len(c.exprs) != 2 || m.exprs[c.exprs[1]] != "(y.b, 1)" {
		t.Fatalf("clause 3: %+v", c)
	}
	if c := m.clauses[3]; c.kind != whenNotMatched || c.action != "NOTHING" {
		t.Fatalf("clause 4: %+v", c)
	}
	for _, bad := range []struct {
		q    string
		want error
		text string
	}{
		{`MERGE t USING s ON t.a = s.a WHEN MATCHED THEN DELETE`, ErrSyntax, "unexpected"},
		{`MERGE INTO t USING s WHEN MATCHED THEN DELETE`, ErrSyntax, "ON"},
		{`MERGE INTO t USING s ON t.a = s.a`, ErrSyntax, "WHEN"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT VALUES (1)`, ErrInvalid, "WHEN NOT MATCHED"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN DELETE`, ErrInvalid, "INSERT"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET a = 1, a = 2`, ErrInvalid, "twice"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)`, ErrInvalid, "2 columns"},
		{`MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN DELETE RETURNING *`, ErrSyntax, "unexpected"},
	} {
		ps, err := ParseUpdate(bad.q)
		if err == nil {
			_, err = ps.mergeParts()
		}
		if !errors.Is(err, bad.want) || !strings.Contains(err.Error(), bad.text) {
			t.Errorf("%s: got %v, want %v mentioning %q", bad.q, err, bad.want, bad.text)
		}
	}
}

// TestSetListNestedLiterals: the expressions of an UPDATE's and a MERGE's
// SET list, and of a MERGE's VALUES, end at a comma outside every bracket
// DuckDB's grammar has (parentheses, lists, structs and maps), never at
// one inside a literal, a string or a quoted name.
func TestSetListNestedLiterals(t *testing.T) {
	exprs := []string{
		"[1, 2]",
		"{'a': 7, 'b': 'x'}",
		"MAP {'a': 1, 'b': 2}",
		"[{'a': [1, 2], 'b': MAP {'k': [3, 4]}}, NULL]",
		"{a: 1, b: 'when, then'}",
		"'], {, '' [' || \"odd, name\"",
		"[x + 1 FOR x IN [1, 2] IF x > 0]",
		"CASE WHEN l = [1, 2] THEN {'a': 1} ELSE {'a': 2} END",
		"ARRAY[1, 2][1:1]",
		"list_value(1, 2) -- a comment, with a comma\n",
	}
	var set, vals []string
	for i, e := range exprs {
		set = append(set, fmt.Sprintf("c%d = %s", i, e))
		vals = append(vals, e)
	}
	ps, err := ParseUpdate("UPDATE t SET " + strings.Join(set, ", ") + " WHERE l = [1, 2]")
	if err != nil {
		t.Fatal(err)
	}
	u, err := ps.updateParts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.exprs, trimmed(exprs)) || u.pred != "l = [1, 2]" {
		t.Fatalf("UPDATE SET %q WHERE %q", u.exprs, u.pred)
	}
	ps, err = ParseUpdate("MERGE INTO t USING s ON t.l = [1, 2] WHEN MATCHED AND s.m = MAP {'a': 1, 'b': 2} THEN UPDATE SET " +
		strings.Join(set, ", ") + " WHEN NOT MATCHED THEN INSERT VALUES (" + strings.Join(vals, ", ") + ")")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ps.mergeParts()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.clauses) != 2 {
		t.Fatalf("%d clauses", len(m.clauses))
	}
	if got := m.exprs[m.clauses[0].cond]; got != "s.m = MAP {'a': 1, 'b': 2}" {
		t.Fatalf("condition %q", got)
	}
	for k, c := range m.clauses {
		var got []string
		for _, i := range c.exprs {
			got = append(got, m.exprs[i])
		}
		if !slices.Equal(got, trimmed(exprs)) {
			t.Fatalf("clause %d: %q", k+1, got)
		}
	}
}

// trimmed is exprs as the parser cuts them: up to their last token.
func trimmed(exprs []string) []string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = strings.TrimSuffix(e, " -- a comment, with a comma\n")
	}
	return out
}
