package planner

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMatchName(t *testing.T) {
	cands := []string{"Orders", "orders", "Lineitem", "nation"}
	for _, c := range []struct {
		name   string
		quoted bool
		want   string
		folded int
	}{
		{"orders", false, "orders", 0},
		{"Orders", false, "Orders", 0},
		{"ORDERS", false, "", 2},
		{"ORDERS", true, "", 0},
		{"lineitem", false, "Lineitem", 0},
		{"lineitem", true, "", 0},
		{"NATION", false, "nation", 0},
		{"region", false, "", 0},
	} {
		got, folded := matchName(c.name, c.quoted, cands)
		if got != c.want || len(folded) != c.folded {
			t.Errorf("matchName(%q, %v) = %q, %v; want %q and %d candidates", c.name, c.quoted, got, folded, c.want, c.folded)
		}
	}
}

// Resolution through Bind: the case of unquoted names does not matter, an
// exact match wins, near misses are suggested, and nothing in a message
// shows the rewritten query.
func TestResolveNames(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	if _, err := execSQL(p, ctx, s, "CREATE TABLE Mixed (Id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT * FROM T", "SELECT * FROM LOCAL.DEFAULT.t", `SELECT * FROM "default".t`,
		"SELECT * FROM default.t", "SELECT id FROM mixed", `SELECT "Id" FROM "Mixed"`, "SELECT * FROM T$snapshots",
		"SELECT a.id FROM t AS a JOIN T AS b ON a.id = b.id"} {
		if _, err := bindText(ctx, p, s, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if _, err := execSQL(p, ctx, s, "CREATE TABLE mixed (x INT)"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    string
		kind error
		msg  string
	}{
		{`SELECT * FROM "T"`, ErrNotFound, "table T does not exist in schema local.default; did you mean t?"},
		{"SELECT * FROM MIXED", ErrInvalid, `table name MIXED is ambiguous in schema local.default: it matches "Mixed" and "mixed"; quote the name to choose one`},
		{"SELECT * FROM tt", ErrNotFound, "table tt does not exist in schema local.default; did you mean t?"},
		{"SELECT * FROM nope.t", ErrNotFound, "schema nope does not exist in catalog local"},
		{"SELECT * FROM lokal.default.t", ErrNotFound, "catalog lokal does not exist; did you mean local?"},
		{"SELECT nosuch FROM t", ErrInvalid, `Referenced column "nosuch" not found in FROM clause!`},
		{"SELECT t.id FROM t AS u", ErrInvalid, "u"},
	} {
		_, err := bindText(ctx, p, s, c.q)
		var ue *UserError
		if !errors.Is(err, c.kind) || !errors.As(err, &ue) || !strings.Contains(ue.UserMessage(), c.msg) {
			t.Errorf("%s: got %v, want %v with %q", c.q, err, c.kind, c.msg)
			continue
		}
		if strings.Contains(ue.UserMessage(), "__icefloe") || strings.Contains(ue.UserMessage(), "LINE 1") {
			t.Errorf("%s: message shows the rewritten query: %s", c.q, ue.UserMessage())
		}
	}
}
