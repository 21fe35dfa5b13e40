package authz

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icefloe/icefloe/internal/auth"
)

func mustPolicy(t *testing.T, roles ...Role) *Policy {
	t.Helper()
	p, err := NewPolicy(roles)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAllowedAndVisible(t *testing.T) {
	p := mustPolicy(t,
		Role{Name: "analyst", Grants: []Grant{
			{Privileges: []Privilege{Select}, On: "local.sales"},
			{Privileges: []Privilege{"insert", Update}, On: "local.sales.orders"},
			{Privileges: []Privilege{All}, On: "lake.tmp_*.*"},
		}},
		Role{Name: "creator", Grants: []Grant{{Privileges: []Privilege{Create, Drop}, On: "local"}}},
	)
	ana := &auth.Principal{Name: "ann", Roles: []string{"analyst"}}
	cases := []struct {
		priv Privilege
		obj  Object
		want bool
	}{
		{Select, Object{"local", "sales", "orders"}, true},  // schema grant covers its tables
		{Select, Object{"local", "sales", "refunds"}, true}, //
		{Select, Object{"local", "sales"}, true},            // and the schema itself
		{Select, Object{"local", "hr", "pay"}, false},       // another schema
		{Select, Object{"local"}, false},                    // not the catalog
		{Insert, Object{"local", "sales", "orders"}, true},  // lower-case privilege name
		{Insert, Object{"local", "sales", "refunds"}, false},
		{Delete, Object{"local", "sales", "orders"}, false},
		{Drop, Object{"lake", "tmp_a", "x"}, true},      // ALL and globs
		{Drop, Object{"lake", "tmp_a"}, false},          // a table grant is no schema grant
		{Select, Object{"lake", "prod", "x"}, false},    //
		{Select, Object{"local", "salesX", "t"}, false}, // exact names are exact
	}
	for _, c := range cases {
		if got := p.Allowed(ana, c.priv, c.obj); got != c.want {
			t.Errorf("%s on %s: %t, want %t", c.priv, c.obj, got, c.want)
		}
	}
	for obj, want := range map[string]bool{"local": true, "local.sales": true, "local.hr": false, "lake": true, "lake.tmp_b": true, "lake.prod": false, "other": false, "local.sales.t": true, "local.hr.t": false} {
		if got := p.Visible(ana, strings.Split(obj, ".")); got != want {
			t.Errorf("visible %s: %t, want %t", obj, got, want)
		}
	}
	admin := &auth.Principal{Name: "root", Roles: []string{AdminRole}}
	cluster := &auth.Principal{Name: auth.ClusterName, Method: auth.MethodCluster}
	for _, pr := range []*auth.Principal{admin, cluster} {
		if !p.Allowed(pr, Drop, Object{"any", "where"}) || !p.Visible(pr, Object{"x"}) {
			t.Errorf("%s is not allowed everything", pr)
		}
	}
	if p.Allowed(nil, Select, Object{"local", "sales", "t"}) || p.Visible(&auth.Principal{Name: "nobody"}, Object{"local"}) {
		t.Error("a principal without roles is allowed something")
	}
	ctx := auth.NewContext(context.Background(), ana)
	err := p.Check(ctx, Delete, Object{"local", "sales", "orders"})
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "DELETE") || !strings.Contains(err.Error(), "table local.sales.orders") || !strings.Contains(err.Error(), "ann") {
		t.Errorf("denial %v does not name the privilege, object and principal", err)
	}
	var none *Policy
	if none.Check(context.Background(), Drop, Object{"x"}) != nil || !none.CanSee(context.Background(), Object{"x"}) {
		t.Error("a nil policy (auth off) refused")
	}
}

func TestNewPolicyErrors(t *testing.T) {
	_, err := NewPolicy([]Role{
		{Name: AdminRole},
		{Name: "r", Grants: []Grant{{Privileges: []Privilege{"FLY"}, On: "a"}, {Privileges: []Privilege{Select}, On: "a.b.c.d"}, {Privileges: []Privilege{Select}, On: "a.[b"}, {On: "a"}}},
		{Name: "r"},
	})
	for _, want := range []string{"built in", `unknown privilege "FLY"`, "a.b.c.d", "bad pattern", "no privileges", "defined twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewPolicy: %v, want %q", err, want)
		}
	}
}

func TestGrantsVersion(t *testing.T) {
	analyst := Role{Name: "analyst", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local.default"}}}
	wider := Role{Name: "analyst", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local"}}}
	p, q := mustPolicy(t, analyst), mustPolicy(t, wider)
	ann := &auth.Principal{Name: "ann", Roles: []string{"analyst"}}
	if p.GrantsVersion(ann) != p.GrantsVersion(&auth.Principal{Name: "ann", Roles: []string{"analyst", "analyst"}}) {
		t.Fatal("the same grants gave two versions")
	}
	for name, other := range map[string]string{
		"another grant on the role": q.GrantsVersion(ann),
		"another principal":         p.GrantsVersion(&auth.Principal{Name: "bob", Roles: []string{"analyst"}}),
		"a role more":               p.GrantsVersion(&auth.Principal{Name: "ann", Roles: []string{"analyst", AdminRole}}),
		"no roles":                  p.GrantsVersion(&auth.Principal{Name: "ann"}),
		"anonymous":                 p.GrantsVersion(nil),
		"no policy":                 (*Policy)(nil).GrantsVersion(ann),
	} {
		if other == p.GrantsVersion(ann) {
			t.Errorf("%s: same grants version", name)
		}
	}
}
