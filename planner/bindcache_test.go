package planner

import (
	"context"
	"github.com/icefloe/icefloe/internal/parse"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/cachestats"
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
	if (planCacheKey{principal: "alice", doc: "doc"}).String() == (planCacheKey{principal: "bob", doc: "doc"}).String() {
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

// planCacheStats are the plan cache's counters (memo class "plan").
func planCacheStats(t *testing.T, p *Planner) cachestats.Stats {
	t.Helper()
	for _, s := range p.opts.Mounts.Cache().CacheStats() {
		if s.Name == "plan" {
			return s
		}
	}
	return cachestats.Stats{Name: "plan"}
}

// TestPlanCacheStale changes, one at a time, each thing a cached bind
// depends on — the table (a commit, a schema change), the principal's
// grants, a session setting, a parameter's type — and checks that the
// next bind misses the plan cache and answers for what changed, while an
// unchanged repeat hits it.
func TestPlanCacheStale(t *testing.T) {
	p := pruneFixture(t)
	policy, err := authz.NewPolicy([]authz.Role{
		{Name: "reader", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local.default"}}},
		{Name: "wide", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: "local"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.opts.Policy = policy
	s := Session{Catalog: "local", Schema: "default"}
	as := func(roles ...string) context.Context {
		return auth.NewContext(context.Background(), &auth.Principal{Name: "alice", Roles: roles})
	}
	alice := as("reader")
	admin := auth.NewContext(context.Background(), &auth.Principal{Name: "root", Roles: []string{authz.AdminRole}})
	bind := func(ctx context.Context, s Session, q string, args ...any) *arrow.Schema {
		t.Helper()
		sch, err := bindText(ctx, p, s, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return sch
	}
	// expect binds q and checks that the plan cache hit (or missed) it.
	expect := func(hit bool, why string, ctx context.Context, s Session, q string, args ...any) *arrow.Schema {
		t.Helper()
		before := planCacheStats(t, p)
		sch := bind(ctx, s, q, args...)
		after := planCacheStats(t, p)
		hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
		if hit && (hits != 1 || misses != 0) || !hit && (hits != 0 || misses != 1) {
			t.Errorf("%s: %s: %d hits, %d misses of the plan cache; want a %s", why, q, hits, misses, map[bool]string{true: "hit", false: "miss"}[hit])
		}
		return sch
	}
	const q = "SELECT * FROM p WHERE a > 1"
	bind(alice, s, q)
	expect(true, "repeated", alice, s, q)

	// The table changed: a commit, then a new column.
	if _, err := execSQL(p, admin, s, "INSERT INTO p (a) VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	expect(false, "after a commit", alice, s, q)
	expect(true, "repeated after the commit", alice, s, q)
	if _, err := execSQL(p, admin, s, "ALTER TABLE p ADD COLUMN extra VARCHAR"); err != nil {
		t.Fatal(err)
	}
	if sch := expect(false, "after a new column", alice, s, q); sch.NumFields() != 8 || sch.Field(7).Name != "extra" {
		t.Errorf("after ALTER TABLE ADD COLUMN the bind has columns %v", fieldNames(sch))
	}

	// The grants changed: the same name with another role.
	expect(false, "with other grants", as("reader", "wide"), s, q)
	expect(true, "with the first grants again", alice, s, q)

	// A session setting changed.
	expect(false, "in a session writing to a branch", alice, Session{Catalog: "local", Schema: "default", WAPBranch: "audit"}, q)
	expect(false, "in a session whose default schema is spelt out otherwise", alice, Session{Catalog: "local", Schema: "DEFAULT"}, q)

	// A parameter's type changed.
	const pq = "SELECT ? AS x FROM p"
	if got := expect(false, "an integer parameter", alice, s, pq, int64(1)); got.Field(0).Type.ID() != arrow.INT64 {
		t.Errorf("? bound to an int64 has type %s", got.Field(0).Type)
	}
	expect(true, "the same integer parameter", alice, s, pq, int64(1))
	if got := expect(false, "a string parameter", alice, s, pq, "1"); got.Field(0).Type.ID() != arrow.STRING {
		t.Errorf("? bound to a string has type %s", got.Field(0).Type)
	}
	expect(false, "a double parameter", alice, s, pq, 1.0)
}

// TestPlanCacheKeyParts: each part of the key changes it.
func TestPlanCacheKeyParts(t *testing.T) {
	base := planCacheKey{principal: "a", grants: "g", session: Session{Catalog: "c", Schema: "s"}, params: []any{int64(1)}, doc: "d"}
	for name, k := range map[string]planCacheKey{
		"principal":  {principal: "b", grants: "g", session: base.session, params: base.params, doc: "d"},
		"grants":     {principal: "a", grants: "h", session: base.session, params: base.params, doc: "d"},
		"catalog":    {principal: "a", grants: "g", session: Session{Catalog: "x", Schema: "s"}, params: base.params, doc: "d"},
		"wap branch": {principal: "a", grants: "g", session: Session{Catalog: "c", Schema: "s", WAPBranch: "b"}, params: base.params, doc: "d"},
		"param type": {principal: "a", grants: "g", session: base.session, params: []any{int32(1)}, doc: "d"},
		"doc":        {principal: "a", grants: "g", session: base.session, params: base.params, doc: "e"},
	} {
		if k.String() == base.String() {
			t.Errorf("a key with another %s is the same key", name)
		}
	}
}
