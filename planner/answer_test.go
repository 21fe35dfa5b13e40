package planner

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/icefloe/icefloe/catalog"
	"github.com/icefloe/icefloe/internal/auth"
	"github.com/icefloe/icefloe/internal/authz"
	"github.com/icefloe/icefloe/internal/resultcache"
)

// answerRows decodes an answer's rows as int64 values of column 0.
func answerRows(t *testing.T, a *Answer) []int64 {
	t.Helper()
	rdr, err := ipc.NewReader(bytes.NewReader(a.IPC))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []int64
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		out = append(out, col.Int64Values()...)
	}
	return out
}

// TestAnswersOnlyForClients: a plan is an answer of the coordinator only
// under WithAnswers (what flightsql sets); writes and other internal
// callers always get worker endpoints.
func TestAnswersOnlyForClients(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 3)
	s := Session{Catalog: "local", Schema: "default"}
	ctx := context.Background()
	for _, q := range []string{"SELECT count(*) FROM t", "SELECT 7::BIGINT"} {
		plain, err := planText(ctx, p, s, q)
		if err != nil {
			t.Fatal(err)
		}
		if plain.Answer != nil || len(plain.Endpoints) == 0 {
			t.Fatalf("%s without WithAnswers: answer %v, %d endpoints", q, plain.Answer != nil, len(plain.Endpoints))
		}
		answered, err := planText(WithAnswers(ctx), p, s, q)
		if err != nil {
			t.Fatal(err)
		}
		if answered.Answer == nil || len(answered.Endpoints) != 0 || answered.Strategy != Local {
			t.Fatalf("%s with WithAnswers: %+v", q, answered)
		}
		if _, err := planText(WithoutAnswers(WithAnswers(ctx)), p, s, q); err != nil {
			t.Fatal(err)
		}
	}
	a, err := planText(WithAnswers(ctx), p, s, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if got := answerRows(t, a.Answer); len(got) != 1 || got[0] != 30 {
		t.Fatalf("count(*) from metadata: %v, want [30]", got)
	}
	if !strings.Contains(a.Explain, "answered from metadata\tcount from 3 manifest entries: 30 rows") {
		t.Fatalf("explain:\n%s", a.Explain)
	}
	off, err := planText(WithoutAnswers(WithAnswers(ctx)), p, s, "SELECT count(*) FROM t")
	if err != nil || off.Answer != nil {
		t.Fatalf("WithoutAnswers: %v %v", off, err)
	}
	// Shapes the manifests do not answer are read.
	for _, q := range []string{
		"SELECT count(*) FROM t WHERE id > 3", "SELECT count(id) FROM t", "SELECT count(*) FROM t GROUP BY s",
		"SELECT count(*) + 1 FROM t", "SELECT count(*) FROM t LIMIT 1", "SELECT count(DISTINCT id) FROM t",
		"SELECT count(*) FROM t a, t b", "WITH c AS (SELECT 1) SELECT count(*) FROM t",
	} {
		pl, err := planText(WithAnswers(ctx), p, s, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if pl.Answer != nil && pl.Answer.Source == "metadata" {
			t.Errorf("%s answered from metadata", q)
		}
	}
}

// TestResultKeyHoldsEverything: every part of what an answer depends on
// changes the result cache's key.
func TestResultKeyHoldsEverything(t *testing.T) {
	role := func(on string) []authz.Role {
		return []authz.Role{{Name: "analyst", Grants: []authz.Grant{{Privileges: []authz.Privilege{authz.Select}, On: on}}}}
	}
	narrow, err := authz.NewPolicy(role("local.default"))
	if err != nil {
		t.Fatal(err)
	}
	wide, err := authz.NewPolicy(role("local"))
	if err != nil {
		t.Fatal(err)
	}
	ann := auth.NewContext(context.Background(), &auth.Principal{Name: "ann", Roles: []string{"analyst"}})
	bob := auth.NewContext(context.Background(), &auth.Principal{Name: "bob", Roles: []string{"analyst"}})
	in := &input{ref: catalog.TableRef{Catalog: "local", Schema: "default", Table: "t"}}
	b := &bound{key: "bind", inputs: []*input{in}}
	s := Session{Catalog: "local", Schema: "default"}
	pn, pw := &Planner{opts: Options{Policy: narrow}}, &Planner{opts: Options{Policy: wide}}
	base := pn.resultKey(ann, s, b, []any{int64(1)})
	if again := pn.resultKey(ann, s, b, []any{int64(1)}); again != base {
		t.Fatal("the same inputs gave two keys")
	}
	other := map[string]resultcache.Key{
		"a changed grant":           pw.resultKey(ann, s, b, []any{int64(1)}),
		"another principal":         pn.resultKey(bob, s, b, []any{int64(1)}),
		"another schema":            pn.resultKey(ann, Session{Catalog: "local", Schema: "x"}, b, []any{int64(1)}),
		"a WAP branch":              pn.resultKey(ann, Session{Catalog: "local", Schema: "default", WAPBranch: "w"}, b, []any{int64(1)}),
		"another parameter value":   pn.resultKey(ann, s, b, []any{int64(2)}),
		"another parameter type":    pn.resultKey(ann, s, b, []any{int32(1)}),
		"another bound plan":        pn.resultKey(ann, s, &bound{key: "bind2", inputs: b.inputs}, []any{int64(1)}),
		"a time-travel snapshot":    pn.resultKey(ann, s, &bound{key: "bind", inputs: []*input{{ref: in.ref, snapshot: 5}}}, []any{int64(1)}),
		"no policy (auth off)":      (&Planner{}).resultKey(ann, s, b, []any{int64(1)}),
		"another table of the same": pn.resultKey(ann, s, &bound{key: "bind", inputs: []*input{{ref: catalog.TableRef{Catalog: "local", Schema: "default", Table: "u"}}}}, []any{int64(1)}),
	}
	for what, k := range other {
		if k == base {
			t.Errorf("%s: same key", what)
		}
	}
}
