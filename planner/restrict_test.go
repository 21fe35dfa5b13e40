package planner

import (
	"context"

	"errors"
	"github.com/apache/arrow-go/v18/arrow"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/parse"
)

// restrictedBind binds q for a principal of role r (with attributes)
// under a policy whose role r holds grant on local.default.p.
func restrictedBind(t *testing.T, p *Planner, g authz.Grant, attrs map[string]string, q string) (*bound, error) {
	t.Helper()
	g.On = "local.default.p"
	g.Privileges = []authz.Privilege{authz.Select}
	policy, err := authz.NewPolicy([]authz.Role{{Name: "r", Grants: []authz.Grant{g}}})
	if err != nil {
		t.Fatal(err)
	}
	p.opts.Policy = policy
	ctx := auth.NewContext(context.Background(), &auth.Principal{Name: "ann", Roles: []string{"r"}, Attributes: attrs})
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return p.bind(ctx, conn, Session{Catalog: "local", Schema: "default"}, parse.Must(q), false)
}

func TestRestrictedScanSQL(t *testing.T) {
	p := pruneFixture(t)
	g := authz.Grant{Where: "b = current_user_attribute('team') AND a > 0", Masks: []authz.Mask{{Column: "B", Expr: "left(b, 1) || current_user"}}}
	b, err := restrictedBind(t, p, g, map[string]string{"team": "blue"}, "SELECT a, b FROM p WHERE a > 5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"'blue'", "'ann'", "\"left\"(b, 1)", "(a > 0)"} {
		if !strings.Contains(b.sql, want) {
			t.Errorf("bound SQL %s lacks %s", b.sql, want)
		}
	}
	if strings.Contains(b.sql, "current_user") {
		t.Errorf("bound SQL %s still calls current_user", b.sql)
	}
	in := b.inputs[0]
	if in.restriction == nil || in.filter != nil || in.cols != nil {
		t.Errorf("restricted input: restriction %v, pushed filter %v, columns %v: want a restriction, no pushed filter (it would read raw values), every column", in.restriction, in.filter, in.cols)
	}
	// Another attribute value is another bind: the memo cannot answer
	// one principal's attributes with another's.
	b2, err := restrictedBind(t, p, g, map[string]string{"team": "red"}, "SELECT a, b FROM p WHERE a > 5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b2.sql, "'red'") || strings.Contains(b2.sql, "'blue'") {
		t.Errorf("bound for team red: %s", b2.sql)
	}
	// A missing attribute is NULL.
	b3, err := restrictedBind(t, p, g, nil, "SELECT count(*) FROM p")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b3.sql, "(b = NULL)") {
		t.Errorf("bound without the attribute: %s", b3.sql)
	}
}

// TestMaskKeepsType: a masked column keeps its type (the mask is cast),
// so result schemas do not change with who reads them.
func TestMaskKeepsType(t *testing.T) {
	p := pruneFixture(t)
	b, err := restrictedBind(t, p, authz.Grant{Masks: []authz.Mask{{Column: "a", Expr: "NULL"}, {Column: "c", Expr: "a * 0"}}}, nil, "SELECT a, c FROM p")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.schema.Field(0).Type; got != arrow.PrimitiveTypes.Int32 {
		t.Errorf("masked a is %s, want int32", got)
	}
	if got := b.schema.Field(1).Type; got != arrow.PrimitiveTypes.Int64 {
		t.Errorf("masked c is %s, want int64", got)
	}
}

func TestRestrictedScanRefusals(t *testing.T) {
	p := pruneFixture(t)
	for _, c := range []struct {
		g    authz.Grant
		want string
	}{
		{authz.Grant{Where: "random() > 0.5"}, "function random is not allowed"},
		{authz.Grant{Where: "a IN (SELECT 1)"}, "subquery is not allowed"},
		{authz.Grant{Where: "nope = 1"}, "column nope is not a column of the table"},
		{authz.Grant{Where: "x.a = 1"}, "column x.a is not a column of the table"},
		{authz.Grant{Where: "true) OR (true"}, "is not one expression"},
		{authz.Grant{Where: "true; DROP TABLE p"}, "is not one expression"},
		{authz.Grant{Masks: []authz.Mask{{Column: "b", Expr: "b) AS b, (b"}}}, "is not one expression"},
		{authz.Grant{Where: "b = current_user_attribute(b)"}, "current_user_attribute takes one constant name"},
		{authz.Grant{Masks: []authz.Mask{{Column: "b", Expr: "(SELECT max(b) FROM p)"}}}, "subquery is not allowed"},
		{authz.Grant{Masks: []authz.Mask{{Column: "b", Expr: "sum(a) OVER ()"}}}, "window is not allowed"},
		{authz.Grant{Masks: []authz.Mask{{Column: "b", Expr: "read_text('/etc/passwd')"}}}, "function read_text is not allowed"},
	} {
		_, err := restrictedBind(t, p, c.g, nil, "SELECT * FROM p")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "grants on local.default.p") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an invalid-policy error naming %q", c.g, err, c.want)
		}
	}
}

func TestRestrictedReadsRefused(t *testing.T) {
	p := pruneFixture(t)
	g := authz.Grant{Where: "a > 0"}
	for _, q := range []string{"SELECT * FROM \"p$files\"", "SELECT * FROM \"p$snapshots\""} {
		if _, err := restrictedBind(t, p, g, nil, q); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "metadata table") {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func TestMaskedColumn(t *testing.T) {
	rs := &authz.Restriction{Arms: []authz.Arm{
		{Where: "region = 'EU'", Masks: map[string]string{"ssn": "'x'"}},
		{Where: "id < 5"},
	}}
	where := []string{"(region = 'EU')", "(id < 5)"}
	if got, want := maskedColumn(rs, where, "ssn"), `CASE WHEN (id < 5) THEN "ssn" WHEN (region = 'EU') THEN ('x') END`; got != want {
		t.Errorf("ssn: %s, want %s", got, want)
	}
	if got := maskedColumn(rs, where, "id"); got != `"id"` {
		t.Errorf("id: %s", got)
	}
	rs.Arms = append(rs.Arms, authz.Arm{})
	if got := maskedColumn(rs, append(where, "true"), "ssn"); got != `"ssn"` {
		t.Errorf("an arm of every row unmasked: %s", got)
	}
}

// TestCheckPolicy: the coordinator refuses, at start, filters and masks
// DuckDB's parser or the allowed functions refuse, naming the role and
// the grant, and takes those that check.
func TestCheckPolicy(t *testing.T) {
	p := pruneFixture(t)
	policy, err := authz.NewPolicy([]authz.Role{
		{Name: "good", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local.*.t*",
			Where: "region = current_user_attribute('region') OR owner = current_user",
			Masks: []authz.Mask{{Column: "ssn", Expr: "'***' || right(ssn, 4)"}}}}},
		{Name: "bad", Grants: []authz.Grant{
			{Privileges: []authz.Privilege{authz.Select}, On: "local.a.t", Where: "random() < 0.5"},
			{Privileges: []authz.Privilege{authz.Select}, On: "local.a.u", Where: "x = = 1"},
			{Privileges: []authz.Privilege{authz.Select}, On: "local.a.v", Masks: []authz.Mask{{Column: "c", Expr: "(SELECT 1)"}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.opts.Policy = policy
	err = p.CheckPolicy(context.Background())
	for _, want := range []string{"role bad, grant on local.a.t: function random is not allowed", "role bad, grant on local.a.u: ", "role bad, grant on local.a.v: subquery is not allowed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckPolicy: %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "role good") {
		t.Errorf("CheckPolicy refused a good grant: %v", err)
	}
}

// TestGrantsVersion: the key a cache of answers holds changes with the
// policy and with everything of the principal filters read.
func TestGrantsVersion(t *testing.T) {
	p := pruneFixture(t)
	at := func(name string, roles []string, attrs map[string]string) string {
		return p.GrantsVersion(auth.NewContext(context.Background(), &auth.Principal{Name: name, Roles: roles, Attributes: attrs}))
	}
	base := at("ann", []string{"a", "b"}, map[string]string{"region": "EU"})
	if base != at("ann", []string{"b", "a"}, map[string]string{"region": "EU"}) {
		t.Error("the order of roles changes the version")
	}
	for what, v := range map[string]string{
		"name":      at("bob", []string{"a", "b"}, map[string]string{"region": "EU"}),
		"roles":     at("ann", []string{"a"}, map[string]string{"region": "EU"}),
		"attribute": at("ann", []string{"a", "b"}, map[string]string{"region": "US"}),
		"no attrs":  at("ann", []string{"a", "b"}, nil),
	} {
		if v == base {
			t.Errorf("another %s keeps the version", what)
		}
	}
	policy, err := authz.NewPolicy([]authz.Role{{Name: "a", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local", Where: "true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p.opts.Policy = policy
	if at("ann", []string{"a", "b"}, map[string]string{"region": "EU"}) == base {
		t.Error("another policy keeps the version")
	}
}
