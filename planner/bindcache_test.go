package planner

import (
	"context"
	"testing"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
)

// TestBindMemoAuthorizes: a bind memoised for one principal neither
// answers another principal's bind nor lets it skip the SELECT check.
func TestBindMemoAuthorizes(t *testing.T) {
	p := pruneFixture(t)
	policy, err := authz.NewPolicy([]authz.Role{
		{Name: "reader", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local.default"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.opts.Policy = policy
	s := Session{Catalog: "local", Schema: "default"}
	alice := auth.NewContext(context.Background(), &auth.Principal{Name: "alice", Roles: []string{"reader"}})
	bob := auth.NewContext(context.Background(), &auth.Principal{Name: "bob"})
	const q = "SELECT a, b FROM p WHERE a > 1"
	bind := func(ctx context.Context) error {
		conn, err := p.opts.Engine.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = p.bind(ctx, conn, s, q, false)
		return err
	}
	for i := range 2 { // the second bind is answered by the memo
		if err := bind(alice); err != nil {
			t.Fatalf("alice, bind %d: %v", i, err)
		}
	}
	if err := bind(bob); err == nil {
		t.Fatal("bob bound a query over a table he may not read, after alice's bind was memoised")
	}
	if bindKey("alice", "doc", nil) == bindKey("bob", "doc", nil) {
		t.Fatal("the bind memo key does not name the principal")
	}
}
