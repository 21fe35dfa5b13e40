package planner

import (
	"context"
	"strings"
	"testing"
)

// TestPlanRedacted: the plan others see holds none of the client's
// literals — strings spanning lines, E-strings, dollar-quoted strings and
// numbers, in fragment SQL, pushed filters and the plan tree — and keeps
// the plan's shape; the client's own EXPLAIN text still shows them.
func TestPlanRedacted(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 4)
	ctx := context.Background()
	for _, c := range []struct {
		sql     string
		secrets []string
	}{
		{"SELECT id FROM t WHERE s = 'reader-secret'", []string{"reader-secret"}},
		{"SELECT id FROM t WHERE s = 'first line\nsecret-second-line\nthird'", []string{"first line", "secret-second-line", "third"}},
		{"SELECT id FROM t WHERE s = E'e-secret\\nmore'", []string{"e-secret", "more"}},
		{"SELECT id FROM t WHERE s = $tag$dollar-secret\nline$tag$", []string{"dollar-secret", "line"}},
		{"SELECT id FROM t WHERE id = 4242424242 OR s IN ('in-secret-1', 'in-secret-2')", []string{"4242424242", "in-secret-1", "in-secret-2"}},
		{"SELECT s, count(*) FROM t WHERE id > 987654321 GROUP BY s", []string{"987654321"}},
	} {
		plan, err := planText(ctx, p, Session{Catalog: "local", Schema: "default"}, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		for _, secret := range c.secrets {
			if !strings.Contains(plan.Explain, secret) {
				t.Errorf("%s: the client's EXPLAIN lost %q:\n%s", c.sql, secret, plan.Explain)
			}
			if strings.Contains(plan.Redacted.Text(), secret) {
				t.Errorf("%s: the redacted plan shows %q:\n%s", c.sql, secret, plan.Redacted.Text())
			}
		}
		for _, keep := range []string{"fragment\t", "plan\tResult ", "endpoint 0\t", "table\tlocal.default.t"} {
			if !strings.Contains(plan.Redacted.Text(), keep) {
				t.Errorf("%s: the redacted plan lost %q:\n%s", c.sql, keep, plan.Redacted.Text())
			}
		}
	}
}
