package planner

import "context"

// ExecHook runs a statement for the tests of this package that make their
// tables and rows with SQL (CREATE TABLE, INSERT, …): those statements
// run in package statement, which planner cannot import, so its
// Executor installs itself here from package planner_test
// (exechook_test.go) before any test runs.
var ExecHook func(ctx context.Context, p *Planner, sess Session, query string, args ...any) (int64, error)

// execSQL runs query with p's options through ExecHook.
func execSQL(p *Planner, ctx context.Context, sess Session, query string, args ...any) (int64, error) {
	return ExecHook(ctx, p, sess, query, args...)
}
