package authz

import (
	"context"
	"testing"

	"github.com/icefloe/icefloe/internal/auth"
)

func TestGrantsVersion(t *testing.T) {
	mk := func(roles ...Role) *Policy {
		p, err := NewPolicy(roles)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(on string) Role {
		return Role{Name: "reader", Grants: []Grant{{Privileges: []Privilege{Select}, On: on}}}
	}
	as := func(roles ...string) context.Context {
		return auth.NewContext(context.Background(), &auth.Principal{Name: "alice", Roles: roles})
	}
	p := mk(read("local.default"), Role{Name: "other", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local"}}})
	base := p.GrantsVersion(as("reader"))
	if got := mk(read("local.default"), Role{Name: "other", Grants: []Grant{{Privileges: []Privilege{Select}, On: "local"}}}).GrantsVersion(as("reader")); got != base {
		t.Errorf("the same grants in a new policy: version %s, want %s", got, base)
	}
	if got := p.GrantsVersion(as("reader", "reader")); got != base {
		t.Errorf("a role held twice changed the version")
	}
	for name, v := range map[string]string{
		"a grant on another schema": mk(read("local.other")).GrantsVersion(as("reader")),
		"another role too":          p.GrantsVersion(as("reader", "other")),
		"no role":                   p.GrantsVersion(as()),
		"admin":                     p.GrantsVersion(as("reader", AdminRole)),
		"anonymous":                 p.GrantsVersion(context.Background()),
		"no policy":                 (*Policy)(nil).GrantsVersion(as("reader")),
	} {
		if v == base {
			t.Errorf("%s: same grants version %s as reader's", name, v)
		}
	}
}
