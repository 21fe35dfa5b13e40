package statement

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/icefloe/icefloe/internal/admit"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
	"github.com/icefloe/icefloe/planner/plan"
)

// TestWritePlansSealed: the write plans of INSERT … SELECT, a
// copy-on-write UPDATE, a compaction and an ingest come with their sink over their
// input as a plan value, and every fragment's ticket is sealed by the
// planner with the statement's principal, deadline and issue time and
// its own fragment of the write spec — nothing opens and seals them
// again before they run.
func TestWritePlansSealed(t *testing.T) {
	e := newEnv(t)
	e.exec(t, `CREATE TABLE c (id BIGINT, s VARCHAR)`)
	for i := range 4 {
		e.exec(t, `INSERT INTO c VALUES (`+string(rune('1'+i))+`, 'x')`)
	}
	ctx := auth.NewContext(context.Background(), &auth.Principal{Name: "alice"})
	ctx, cancel := admit.WithTimeout(ctx, time.Minute)
	defer cancel()
	head := e.load(t, "default", "c").CurrentSnapshot().SnapshotID
	check := func(what string, wp *planner.WritePlan, sink plan.Sink, words ...string) {
		t.Helper()
		if wp == nil || len(wp.Endpoints) == 0 {
			t.Fatalf("%s: no write plan", what)
		}
		if wp.Tree.Sink != sink || wp.Tree.Snapshot != head || wp.Tree.Fragments != len(wp.Endpoints) || wp.Tree.Table != "local.default.c" {
			t.Errorf("%s: sink %s", what, wp.Tree.Head())
		}
		text := wp.String()
		for _, w := range words {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the plan has no %q:\n%s", what, w, text)
			}
		}
		for i, ep := range wp.Endpoints {
			tk, err := e.key.Open(ep.Ticket, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if tk.Principal != "alice" || tk.IssuedAt.IsZero() || tk.Deadline.IsZero() || tk.Timeout != time.Minute {
				t.Errorf("%s: fragment %d: principal %q, issued %v, deadline %v (%v)", what, i, tk.Principal, tk.IssuedAt, tk.Deadline, tk.Timeout)
			}
			if tk.Write == nil || tk.Write.WriteUUID != planner.FragmentUUID(wp.Write.WriteUUID, i) || tk.Write.Table == nil {
				t.Errorf("%s: fragment %d carries write %+v, want the statement's with fragment UUID %d", what, i, tk.Write, i)
			}
		}
	}

	tgt, err := e.x.LoadTarget(ctx, e.sess, []string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	query, err := parse.Parse(`SELECT id + 10, s FROM c`)
	if err != nil {
		t.Fatal(err)
	}
	w := e.x.NewWrite(tgt)
	wp, err := e.x.PlanWrite(ctx, e.sess, tgt, query, w)
	if err != nil {
		t.Fatal(err)
	}
	check("INSERT … SELECT", wp, plan.SinkAppend, "Write append into local.default.c", "Result ", "Scan local.default.c")

	st, err := parse.Parse(`UPDATE c SET s = 'y' WHERE id = 2`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.x.PlanDML(ctx, e.sess, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := e.x.PlanRewrite(ctx, e.sess, d)
	if err != nil {
		t.Fatal(err)
	}
	if rw == nil {
		t.Fatal("UPDATE planned no rewrite")
	}
	if !rw.Write.Rewrite || rw.Write.MatchSQL == "" {
		t.Errorf("rewrite's write spec: %+v", rw.Write)
	}
	check("UPDATE", &rw.WritePlan, plan.SinkRowDelta, "Write row delta into local.default.c", "Fragment rewrite [×", "Scan local.default.c")

	spec := planner.DefaultCompactSpec(tgt.Pinned.Table)
	spec.MinInputFiles = 2
	cp, err := e.x.PlanCompaction(ctx, e.sess, tgt, spec, oneWorker{}.Live())
	if err != nil {
		t.Fatal(err)
	}
	if cp == nil {
		t.Fatal("nothing to compact in 4 small files")
	}
	check("compaction", &cp.WritePlan, plan.SinkCompact, "Write rewrite files into local.default.c", "Fragment compact [×", "4 of 4 files")

	ip, err := e.x.PlanIngest(ctx, tgt, w, []planner.Worker{{Location: "grpc://127.0.0.1:1"}, {Location: "grpc://127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	check("ingest", ip, plan.SinkIngest, "Write ingest into local.default.c")
	if ip.Tree.In != nil || ip.Endpoints[1].Locations[0] != "grpc://127.0.0.1:2" {
		t.Errorf("ingest plan: %s, fragment 1 at %v", ip.Tree.Head(), ip.Endpoints[1].Locations)
	}
}

// TestExplainPrintsWritePlan: EXPLAIN of INSERT … SELECT, CREATE TABLE …
// AS and a copy-on-write DELETE prints the write's plan: its sink, at the
// target's snapshot, over the plan its fragments read.
func TestExplainPrintsWritePlan(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(t, `CREATE TABLE w (id BIGINT, s VARCHAR)`)
	e.exec(t, `INSERT INTO w VALUES (1, 'a'), (2, 'b')`)
	head := e.load(t, "default", "w").CurrentSnapshot().SnapshotID
	for _, c := range []struct{ q, sink, under string }{
		{`EXPLAIN INSERT INTO w SELECT id + 10, s FROM w`, fmt.Sprintf("write plan\tWrite append into local.default.w at snapshot %d: 1 fragments, one commit", head), "write plan\t  Result "},
		{`EXPLAIN CREATE TABLE w2 AS SELECT * FROM w`, "write plan\tWrite append into local.default.w2", "write plan\t  Result "},
		{`EXPLAIN DELETE FROM w WHERE id = 1`, fmt.Sprintf("write plan\tWrite row delta into local.default.w at snapshot %d", head), "write plan\t  Fragment rewrite [×1, per group]"},
	} {
		plan, err := planText(ctx, e.x, e.sess, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		tk, err := e.key.Open(plan.Endpoints[0].Ticket, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out := explainText(t, e, tk.SQL)
		for _, w := range []string{c.sink, c.under, "write plan\t    "} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the plan has no %q:\n%s", c.q, w, out)
			}
		}
	}
}
