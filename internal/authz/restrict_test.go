package authz

import (
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/auth"
)

func TestRestriction(t *testing.T) {
	p := mustPolicy(t,
		Role{Name: "eu", Grants: []Grant{
			{Privileges: []Privilege{Select}, On: "local.hr.people", Where: " region = 'EU' ",
				Masks: []Mask{{Column: "SSN", Expr: "'***'"}}},
			{Privileges: []Privilege{Insert}, On: "local.hr"},
		}},
		Role{Name: "mine", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local.hr.*", Where: "owner = current_user"}}},
		Role{Name: "hr", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local.hr"}}},
	)
	people := Object{"local", "hr", "people"}
	eu := &auth.Principal{Name: "e", Roles: []string{"eu"}}
	r := p.Restriction(eu, people)
	if r == nil || len(r.Arms) != 1 || r.Arms[0].Where != "region = 'EU'" || r.Arms[0].Masks["ssn"] != "'***'" {
		t.Fatalf("eu's restriction: %+v", r)
	}
	if !r.Filtered() || !r.Masked("ssn") || r.Masked("name") || r.String() != "a row filter and column masks" {
		t.Errorf("eu's restriction says %s, filtered %t", r, r.Filtered())
	}
	if p.Restriction(eu, Object{"local", "hr", "other"}) != nil {
		t.Error("a table eu has no SELECT on is restricted (Check refuses it)")
	}
	// Grants add up: each is an arm; an unrestricted one lifts all.
	both := &auth.Principal{Name: "b", Roles: []string{"eu", "mine"}}
	if r := p.Restriction(both, people); r == nil || len(r.Arms) != 2 || r.Arms[1].Where != "owner = current_user" || r.Arms[1].Masks != nil {
		t.Errorf("eu and mine: %+v", r)
	}
	if r := p.Restriction(&auth.Principal{Name: "h", Roles: []string{"eu", "hr"}}, people); r != nil {
		t.Errorf("a plain SELECT on the schema still restricted: %+v", r)
	}
	for _, pr := range []*auth.Principal{nil, {Name: "root", Roles: []string{AdminRole}}, {Name: auth.ClusterName, Method: auth.MethodCluster}} {
		if p.Restriction(pr, people) != nil {
			t.Errorf("%s restricted", pr)
		}
	}
	var none *Policy
	if none.Restriction(eu, people) != nil {
		t.Error("no policy restricts")
	}
	// A grant with a filter allows SELECT as any grant does.
	if !p.Allowed(eu, Select, people) {
		t.Error("a restricted grant does not allow SELECT")
	}
}

func TestRestrictionErrors(t *testing.T) {
	_, err := NewPolicy([]Role{{Name: "r", Grants: []Grant{
		{Privileges: []Privilege{Select, Insert}, On: "a.b.c", Where: "x = 1"},
		{Privileges: []Privilege{All}, On: "a.b.c", Masks: []Mask{{Column: "x", Expr: "1"}}},
		{Privileges: []Privilege{Select}, On: "a.b.c", Where: "   "},
		{Privileges: []Privilege{Select}, On: "a.b.c", Masks: []Mask{{Column: "", Expr: "1"}}},
		{Privileges: []Privilege{Select}, On: "a.b.d", Masks: []Mask{{Column: "x", Expr: ""}}},
		{Privileges: []Privilege{Select}, On: "a.b.e", Masks: []Mask{{Column: "x", Expr: "1"}, {Column: "X", Expr: "2"}}},
	}}})
	for _, want := range []string{"SELECT alone", "empty where", "names no column", "column x has no expression", "column X masked twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewPolicy: %v, want %q", err, want)
		}
	}
}

func TestPolicyVersion(t *testing.T) {
	base := Role{Name: "r", Grants: []Grant{{Privileges: []Privilege{Select}, On: "a.b.c", Where: "x = 1"}}}
	v := mustPolicy(t, base).Version()
	if v != mustPolicy(t, base).Version() {
		t.Fatal("the same policy has two versions")
	}
	for name, r := range map[string]Role{
		"filter":    {Name: "r", Grants: []Grant{{Privileges: []Privilege{Select}, On: "a.b.c", Where: "x = 2"}}},
		"mask":      {Name: "r", Grants: []Grant{{Privileges: []Privilege{Select}, On: "a.b.c", Where: "x = 1", Masks: []Mask{{Column: "y", Expr: "0"}}}}},
		"object":    {Name: "r", Grants: []Grant{{Privileges: []Privilege{Select}, On: "a.b.d", Where: "x = 1"}}},
		"privilege": {Name: "r", Grants: []Grant{{Privileges: []Privilege{Insert}, On: "a.b.c"}}},
		"role":      {Name: "s", Grants: base.Grants},
	} {
		if mustPolicy(t, r).Version() == v {
			t.Errorf("a changed %s keeps the version", name)
		}
	}
	var none *Policy
	if none.Version() == v {
		t.Error("no policy has a policy's version")
	}
}
