package planner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestValueSizeGuard: a sized call keeps its result name and type, its
// fragment's SQL carries the guard naming the limit's key, and calls
// nested deeper than maxSizedNesting are refused.
func TestValueSizeGuard(t *testing.T) {
	p, key := testPlanner(t, twoWorkers, 1)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	plan, err := planText(ctx, p, s, "SELECT repeat(s, 2), lpad(s, 5, '-') AS padded, length(repeat('ab', id)) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range plan.Schema.Fields() {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, "|"), "repeat(s, 2)|padded|length(repeat('ab', id))"; got != want {
		t.Fatalf("result names %q, want %q", got, want)
	}
	tk, err := key.Open(plan.Endpoints[0].Ticket, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tk.SQL, "limit key limits.max_value_bytes") || strings.Count(tk.SQL, `error"(`) < 3 {
		t.Fatalf("fragment SQL without the guards: %s", tk.SQL)
	}
	deep := "SELECT repeat(repeat(repeat(repeat(repeat('x', 2), 2), 2), 2), 2)"
	if _, err := planText(ctx, p, s, deep); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "nest 5 deep") {
		t.Fatalf("five nested repeats: %v", err)
	}
}
