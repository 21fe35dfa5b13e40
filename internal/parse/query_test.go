package parse

import (
	"maps"
	"testing"
)

func TestTemporalClauses(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT * FROM t FOR VERSION AS OF 'b'`:                             `SELECT * FROM t AT (VERSION => 'b')`,
		`SELECT * FROM t VERSION AS OF 42 WHERE x = 1`:                      `SELECT * FROM t AT (VERSION => 42) WHERE x = 1`,
		`SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01' AS x`: `SELECT * FROM t AS x AT (TIMESTAMP => TIMESTAMP '2024-01-01')`,
		`SELECT * FROM t FOR VERSION AS OF 'b' y JOIN u ON y.a = u.a`:       `SELECT * FROM t y AT (VERSION => 'b') JOIN u ON y.a = u.a`,
		`SELECT * FROM t FOR TIMESTAMP AS OF '2024-01-01' JOIN u USING (a)`: `SELECT * FROM t AT (TIMESTAMP => '2024-01-01') JOIN u USING (a)`,
		`SELECT 'FOR VERSION AS OF 1' FROM t`:                               `SELECT 'FOR VERSION AS OF 1' FROM t`,
		`SELECT version AS of FROM t`:                                       `SELECT version AS of FROM t`,
		`SELECT * FROM t FOR VERSION AS OF (SELECT 1)`:                      `SELECT * FROM t FOR VERSION AS OF (SELECT 1)`,
		// Both rewrites at once, from the same tokens.
		`SELECT * FROM default.t VERSION AS OF 1 AS default JOIN default.u ON true;`: `SELECT * FROM "default".t AS default AT (VERSION => 1) JOIN "default".u ON true;`,
		"  -- lead\nSELECT * FROM default.t FOR VERSION AS OF 3 x ;  ":               "  -- lead\nSELECT * FROM \"default\".t x AT (VERSION => 3) ;  ",
	} {
		st := Must(in)
		if got := st.Query().Duck; got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
		if ref := refRewrite(in); st.Query().Duck != ref {
			t.Errorf("%s\n got %s\n two passes gave %s", in, st.Query().Duck, ref)
		}
	}
}

func TestQuoteQualifiers(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT * FROM default.orders":                 `SELECT * FROM "default".orders`,
		"SELECT * FROM local.default.orders":           `SELECT * FROM local."default".orders`,
		"SELECT * FROM DEFAULT.t, default.u":           `SELECT * FROM "DEFAULT".t, "default".u`,
		"SELECT 'default.x', \"default\".y FROM t":     "SELECT 'default.x', \"default\".y FROM t",
		"SELECT * FROM t -- default.x":                 "SELECT * FROM t -- default.x",
		"SELECT default . x FROM t":                    "SELECT default . x FROM t",
		"SELECT d.default.x FROM local.default.t AS d": `SELECT d."default".x FROM local."default".t AS d`,
	} {
		if got := Must(in).Query().Duck; got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	// Inside a statement of another kind, only its queries are rewritten.
	ins := Must("INSERT INTO default.t SELECT * FROM default.u").Body.(*Insert)
	if ins.Query.Query().Duck != `SELECT * FROM "default".u` || ins.Name[0] != "default" {
		t.Errorf("insert: %+v %q", ins, ins.Query.Query().Duck)
	}
}

func TestQuotedNames(t *testing.T) {
	st := Must(`SELECT "A", b FROM "MyTable" JOIN x ON "x".id = "B" WHERE b = 'B'`)
	for _, want := range []string{"A", "MyTable", "B"} {
		if !st.Quoted(want) {
			t.Errorf("%s not quoted in %v", want, st.QuotedNames())
		}
	}
	if st.Quoted("x") || st.Quoted("b") || len(st.QuotedNames()) != 3 {
		t.Errorf("quoted: %v", st.QuotedNames())
	}
	if !maps.Equal(st.QuotedNames(), refQuotedIdents(st.Text)) {
		t.Errorf("quoted %v, the planner's %v", st.QuotedNames(), refQuotedIdents(st.Text))
	}
}

// FuzzRewrite holds the one-pass rewrite to the two passes it replaces,
// and the quoted names to the planner's, on any text that parses as a
// query.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM t FOR VERSION AS OF 'b' y JOIN u ON y.a = u.a`,
		`SELECT * FROM default.t VERSION AS OF 1 AS default JOIN default.u ON true`,
		`SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01' AS "default"`,
		`WITH x AS (SELECT 1) SELECT * FROM x TIMESTAMP AS OF 5 default.y`,
		"SELECT * FROM t VERSION AS OF 1 VERSION AS OF 2",
		"(SELECT 1) -- VERSION AS OF 1\n",
		`FROM "DEFAULT".t SYSTEM_VERSION AS OF DATE '2024-01-01' q WHERE default.x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := Parse(s)
		if err != nil || st.Query() == nil || st.Text != s {
			return
		}
		if got, want := st.Query().Duck, refRewrite(s); got != want {
			t.Fatalf("%q:\n got %q\nwant %q", s, got, want)
		}
		if !maps.Equal(st.QuotedNames(), refQuotedIdents(s)) && len(st.QuotedNames())+len(refQuotedIdents(s)) > 0 {
			t.Fatalf("%q: quoted %v, want %v", s, st.QuotedNames(), refQuotedIdents(s))
		}
	})
}
