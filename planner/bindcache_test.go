package planner

import (
	"context"
	"github.com/icefloe/icefloe/internal/parse"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

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
		_, err = p.bind(ctx, conn, s, parse.Must(q), false)
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

// TestBindMemoSessions: one query text bound in sessions with other
// current schemas (set directly or by USE) binds each session's own
// table, and the session functions answer each session's values, however
// the memo was filled before.
func TestBindMemoSessions(t *testing.T) {
	p, _, cat := testPlannerWith(t, twoWorkers, 0, nil)
	ctx := context.Background()
	def := Session{Catalog: "local", Schema: "default"}
	// The schemas are made in the catalog: CREATE SCHEMA is run by
	// statement.Executor.
	for _, ns := range []string{"s1", "s2"} {
		if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		"CREATE TABLE s1.m (x INTEGER)", "CREATE TABLE s2.m (x VARCHAR, y DOUBLE)",
	} {
		if _, err := execSQL(p, ctx, def, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s1, err := p.Use(ctx, def, parse.Must("USE s1"))
	if err != nil {
		t.Fatalf("USE s1: %v", err)
	}
	s2 := Session{Catalog: "local", Schema: "s2"}
	want := map[string]string{"s1": "x: type=int32", "s2": "x: type=utf8"}
	for round := range 2 { // the second round is answered by the memo
		for _, s := range []Session{s1, s2, s1} {
			sch, err := bindText(ctx, p, s, "SELECT * FROM m")
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, s.Schema, err)
			}
			if got := sch.Field(0).String(); !strings.HasPrefix(got, want[s.Schema]) || (s.Schema == "s1") != (sch.NumFields() == 1) {
				t.Errorf("round %d: SELECT * FROM m in schema %s bound %s", round, s.Schema, sch)
			}
			conn, err := p.opts.Engine.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.bind(ctx, conn, s, parse.Must("SELECT current_schema() AS c, x FROM m"), false)
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.sql, "'"+s.Schema+"'") {
				t.Errorf("round %d: current_schema() in schema %s bound as %s", round, s.Schema, b.sql)
			}
		}
	}
}
