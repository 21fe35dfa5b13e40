package planner

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestPureTableFunctions: generate_series, range and unnest plan, alone,
// joined with a table and laterally over its columns; every other table
// function, a qualified name and a query as an argument are refused.
func TestPureTableFunctions(t *testing.T) {
	p, _ := testPlanner(t, twoWorkers, 2)
	ctx := context.Background()
	s := Session{Catalog: "local", Schema: "default"}
	for _, q := range []string{
		"SELECT * FROM range(3)",
		"SELECT * FROM generate_series(1, 3) g(x)",
		"SELECT * FROM range(DATE '2020-01-01', DATE '2020-01-05', INTERVAL 1 DAY)",
		"SELECT * FROM unnest([1, 2, 3])",
		"SELECT t.id, g.x FROM t JOIN generate_series(1, 3) g(x) ON t.id = g.x",
		"SELECT t.id, u.x FROM t, unnest([t.id, t.id + 1]) u(x)",
		"SELECT unnest([1, 2]) AS x FROM t",
	} {
		if _, err := planText(ctx, p, s, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		q    string
		want error
		word string
	}{
		{"SELECT * FROM read_csv('/etc/passwd')", ErrRefused, "read_csv"},
		{"SELECT * FROM glob('*')", ErrRefused, "glob"},
		{"SELECT * FROM main.range(3)", ErrRefused, "range"},
		{"SELECT * FROM system.main.range(3)", ErrRefused, "range"},
		{"SELECT * FROM range((SELECT count(*) FROM t))", ErrUnsupported, "range"},
		{"SELECT * FROM unnest((SELECT list(s) FROM t))", ErrUnsupported, "unnest"},
		{"SELECT * FROM range(3), duckdb_settings()", ErrRefused, "duckdb_settings"},
		{"SELECT * FROM range(length(current_setting('temp_directory')))", ErrRefused, "current_setting"},
	} {
		_, err := planText(ctx, p, s, c.q)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.word) {
			t.Errorf("%s: got %v, want %v naming %s", c.q, err, c.want, c.word)
		}
	}
}
