package planner

import (
	"errors"
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
