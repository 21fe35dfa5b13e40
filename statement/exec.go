package statement

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/commit"
	"github.com/icefloe/icefloe/planner"
)

// runner runs one parsed statement and returns its update count.
type runner func(ctx context.Context, sess planner.Session) (int64, error)

// Exec runs one statement that returns no rows and returns its update
// count: the rows an INSERT added, updated or deleted, 0 for DDL (the
// grammar is in docs/sql.md). Unqualified names take sess.Catalog and
// sess.Schema. args bind the parameters of an INSERT, UPDATE or DELETE.
// Anything that is not a statement of this package returns an error
// wrapping planner.ErrUnsupported.
func (e *Executor) Exec(ctx context.Context, sess planner.Session, query string, args ...any) (int64, error) {
	var b params
	if len(args) > 0 {
		b.rows = [][]any{args}
	}
	return e.execBatch(ctx, sess, query, &b)
}

// ExecBatch runs an update for every row of the parameter batches (one
// column per placeholder; no batch runs it once without values) and
// returns the total count. An INSERT … VALUES writes the rows of every
// parameter row in one commit, or none of them; other statements run once
// per row, in order, each with its own commit, and stop at the first
// error. An error names its parameter row when there are several. The
// caller keeps its batches.
func (e *Executor) ExecBatch(ctx context.Context, sess planner.Session, query string, recs []arrow.RecordBatch) (int64, error) {
	return e.execBatch(ctx, sess, query, &params{recs: recs})
}

func (e *Executor) execBatch(ctx context.Context, sess planner.Session, query string, b *params) (int64, error) {
	ctx = commit.WithStatement(ctx)
	ps, err := planner.ParseUpdate(query)
	if err != nil {
		return 0, err
	}
	dml := ps.At("INSERT") || ps.At("UPDATE") || ps.At("DELETE")
	if b.len() > 0 && !dml {
		return 0, fmt.Errorf("%w: parameters outside INSERT, UPDATE and DELETE", planner.ErrUnsupported)
	}
	if ps.At("INSERT") {
		return e.insert(ctx, sess, ps, b)
	}
	rows, err := b.values()
	if err != nil {
		return 0, err
	}
	if len(rows) <= 1 {
		var args []any
		if len(rows) == 1 {
			args = rows[0]
		}
		return e.exec(ctx, sess, ps, args)
	}
	var total int64
	for i, row := range rows {
		n, err := e.exec(ctx, sess, ps.WithTokens(ps.Tokens()), row)
		if err != nil {
			return total, rowError(i, len(rows), err)
		}
		total += n
	}
	return total, nil
}

// exec runs one statement other than INSERT with one set of parameter
// values (only UPDATE and DELETE take any).
func (e *Executor) exec(ctx context.Context, sess planner.Session, ps *planner.Parser, args []any) (int64, error) {
	if run := e.own(ps); run != nil {
		return run(ctx, sess)
	}
	return e.dml(ctx, sess, ps, args)
}

// own returns the runner of the statement ps when it takes no
// parameters, else nil: it is UPDATE, DELETE or MERGE (dml), or not a
// statement this package runs.
func (e *Executor) own(ps *planner.Parser) runner {
	var run func(context.Context, planner.Session, *planner.Parser) error
	switch {
	case ps.At("TRUNCATE"):
		return func(ctx context.Context, sess planner.Session) (int64, error) { return e.truncate(ctx, sess, ps) }
	case ps.At("ALTER"):
		return func(ctx context.Context, sess planner.Session) (int64, error) { return e.alter(ctx, sess, ps) }
	case ps.At("CREATE", "TABLE"):
		return func(ctx context.Context, sess planner.Session) (int64, error) { return e.createTable(ctx, sess, ps) }
	case ps.At("CREATE", "OR", "REPLACE", "TABLE"):
		return func(ctx context.Context, sess planner.Session) (int64, error) {
			return e.createOrReplace(ctx, sess, ps)
		}
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

// alter runs an ALTER statement: ALTER TABLE … EXECUTE
// (alterMaintenance), else schema, property, partition and
// identifier-field evolution, branches and tags and RENAME (alterTable).
func (e *Executor) alter(ctx context.Context, sess planner.Session, ps *planner.Parser) (int64, error) {
	if n, ok, err := e.alterMaintenance(ctx, sess, ps); ok {
		return n, err
	}
	return 0, e.alterTable(ctx, sess, ps)
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
