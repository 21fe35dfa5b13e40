package statement

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/planner"
)

// runner runs one parsed statement and returns its update count.
type runner func(ctx context.Context, sess planner.Session) (int64, error)

// Exec runs one statement that returns no rows and returns its update
// count (the grammar is in docs/sql.md). The statements this package runs
// (CREATE and DROP SCHEMA, CREATE and DROP VIEW, DROP TABLE, TRUNCATE,
// ALTER) run here; the planner
// runs the others (planner.Planner.Exec lists them) and fails on anything
// else. args bind the parameters of an INSERT, UPDATE or DELETE.
func (e *Executor) Exec(ctx context.Context, sess planner.Session, query string, args ...any) (int64, error) {
	if run := e.own(query); run != nil && len(args) == 0 {
		return run(commit.WithStatement(ctx), sess)
	}
	return e.Planner.Exec(ctx, sess, query, args...)
}

// ExecBatch runs an update for every row of the parameter batches and
// returns the total count, as planner.Planner.ExecBatch does; the
// statements this package runs take no parameters and run once. The
// caller keeps its batches.
func (e *Executor) ExecBatch(ctx context.Context, sess planner.Session, query string, params []arrow.RecordBatch) (int64, error) {
	if run := e.own(query); run != nil && paramRows(params) == 0 {
		return run(commit.WithStatement(ctx), sess)
	}
	return e.Planner.ExecBatch(ctx, sess, query, params)
}

// own returns the runner of query when this package runs that kind of
// statement, else nil: the planner runs it, or reports what is wrong with
// it (including parameters on a statement that takes none).
func (e *Executor) own(query string) runner {
	ps, err := planner.ParseUpdate(query)
	if err != nil {
		return nil
	}
	var run func(context.Context, planner.Session, *planner.Parser) error
	switch {
	case ps.At("TRUNCATE"):
		return func(ctx context.Context, sess planner.Session) (int64, error) { return e.truncate(ctx, sess, ps) }
	case ps.At("ALTER"):
		return func(ctx context.Context, sess planner.Session) (int64, error) { return e.alter(ctx, sess, ps) }
	case ps.At("CREATE", "SCHEMA"):
		run = e.createSchema
	case ps.At("DROP", "SCHEMA"):
		run = e.dropSchema
	case ps.At("DROP", "TABLE"):
		run = e.dropTable
	case ps.At("CREATE", "VIEW"), ps.At("CREATE", "OR", "REPLACE", "VIEW"):
		run = e.createView
	case ps.At("DROP", "VIEW"):
		run = e.dropView
	default:
		return nil
	}
	return func(ctx context.Context, sess planner.Session) (int64, error) { return 0, run(ctx, sess, ps) }
}

// alter runs an ALTER statement: ALTER TABLE … EXECUTE in the planner
// (planner.Planner.AlterMaintenance), else schema, property, partition
// and identifier-field evolution, branches and tags and RENAME
// (alterTable).
func (e *Executor) alter(ctx context.Context, sess planner.Session, ps *planner.Parser) (int64, error) {
	if n, ok, err := e.AlterMaintenance(ctx, sess, ps); ok {
		return n, err
	}
	return 0, e.alterTable(ctx, sess, ps)
}

// paramRows is the number of parameter rows in params.
func paramRows(params []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range params {
		n += r.NumRows()
	}
	return n
}
