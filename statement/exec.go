package statement

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner"
)

// Exec runs one statement that returns no rows (a statement of a kind
// whose runner is parse.RunExecutor) and returns its update count: the
// rows an INSERT added, updated or deleted, 0 for DDL (the grammar is in
// docs/sql.md). Unqualified names take sess.Catalog and sess.Schema.
// args bind the parameters of an INSERT, UPDATE or DELETE. Anything that
// is not a statement of this package returns an error wrapping
// planner.ErrUnsupported.
func (e *Executor) Exec(ctx context.Context, sess planner.Session, st *parse.Statement, args ...any) (int64, error) {
	var b params
	if len(args) > 0 {
		b.rows = [][]any{args}
	}
	return e.execBatch(ctx, sess, st, &b)
}

// ExecBatch runs an update for every row of the parameter batches (one
// column per placeholder; no batch runs it once without values) and
// returns the total count. An INSERT … VALUES writes the rows of every
// parameter row in one commit, or none of them; other statements run once
// per row, in order, each with its own commit, and stop at the first
// error. An error names its parameter row when there are several. The
// caller keeps its batches.
func (e *Executor) ExecBatch(ctx context.Context, sess planner.Session, st *parse.Statement, recs []arrow.RecordBatch) (int64, error) {
	return e.execBatch(ctx, sess, st, &params{recs: recs})
}

func (e *Executor) execBatch(ctx context.Context, sess planner.Session, st *parse.Statement, b *params) (int64, error) {
	// An update's queries run on the workers: their endpoints are write
	// fragments, never answers of the coordinator.
	ctx = commit.WithStatement(planner.WithoutAnswers(ctx))
	run, ok := runners[st.Kind]
	if !ok {
		return 0, fmt.Errorf("%w: %s statements", planner.ErrUnsupported, st.Kind)
	}
	if b.len() > 0 && !st.Info().Params {
		return 0, fmt.Errorf("%w: parameters outside INSERT, UPDATE and DELETE", planner.ErrUnsupported)
	}
	return run(e, ctx, sess, st, b)
}

// runner runs one statement of a kind with the statement's parameter
// rows and returns its update count.
type runner func(e *Executor, ctx context.Context, sess planner.Session, st *parse.Statement, b *params) (int64, error)

// runners are the runners of the kinds this package runs, by kind. Each
// file that runs a kind registers it (in an init func) with runs,
// runsDDL, runsPerRow or runsWithParams.
var runners = map[parse.Kind]runner{}

// runs registers run, over the typed body of kind k's statements, which
// take no parameters.
func runs[B parse.Body](k parse.Kind, run func(e *Executor, ctx context.Context, sess planner.Session, body B) (int64, error)) {
	runners[k] = func(e *Executor, ctx context.Context, sess planner.Session, st *parse.Statement, _ *params) (int64, error) {
		return run(e, ctx, sess, st.Body.(B))
	}
}

// runsDDL registers a runner whose update count is 0.
func runsDDL[B parse.Body](k parse.Kind, run func(e *Executor, ctx context.Context, sess planner.Session, body B) error) {
	runs(k, func(e *Executor, ctx context.Context, sess planner.Session, body B) (int64, error) {
		return 0, run(e, ctx, sess, body)
	})
}

// runsWithParams registers a runner that takes every parameter row at
// once (INSERT, which writes them in one commit).
func runsWithParams[B parse.Body](k parse.Kind, run func(e *Executor, ctx context.Context, sess planner.Session, body B, b *params) (int64, error)) {
	runners[k] = func(e *Executor, ctx context.Context, sess planner.Session, st *parse.Statement, b *params) (int64, error) {
		return run(e, ctx, sess, st.Body.(B), b)
	}
}

// runsPerRow registers a runner that runs once per parameter row (once
// without values when there are none), in order, each with its own
// commit, and stops at the first error: UPDATE, DELETE, MERGE. It gets
// the whole statement (the planner prints the statements it runs for it).
func runsPerRow(k parse.Kind, run func(e *Executor, ctx context.Context, sess planner.Session, st *parse.Statement, args []any) (int64, error)) {
	runners[k] = func(e *Executor, ctx context.Context, sess planner.Session, st *parse.Statement, b *params) (int64, error) {
		rows, err := b.values()
		if err != nil {
			return 0, err
		}
		if len(rows) <= 1 {
			var args []any
			if len(rows) == 1 {
				args = rows[0]
			}
			return run(e, ctx, sess, st, args)
		}
		var total int64
		for i, row := range rows {
			n, err := run(e, ctx, sess, st, row)
			if err != nil {
				return total, rowError(i, len(rows), err)
			}
			total += n
		}
		return total, nil
	}
}

// params is the parameter rows of one update: a client's Arrow batches
// (recs), or Go values (rows, Exec's args), or none.
type params struct {
	recs []arrow.RecordBatch
	rows [][]any
}

// len is the number of parameter rows.
func (b *params) len() int {
	if b.rows != nil {
		return len(b.rows)
	}
	n := 0
	for _, r := range b.recs {
		n += int(r.NumRows())
	}
	return n
}

// values returns the rows as Go values (planner.ParamRows of the batches).
func (b *params) values() ([][]any, error) {
	if b.rows == nil && len(b.recs) > 0 {
		rows, err := planner.ParamRows(b.recs)
		if err != nil {
			return nil, err
		}
		b.rows = rows
	}
	return b.rows, nil
}

// rowError names the parameter row an error came from, when there are
// several.
func rowError(i, n int, err error) error {
	if n > 1 {
		return fmt.Errorf("parameter row %d: %w", i+1, err)
	}
	return err
}
