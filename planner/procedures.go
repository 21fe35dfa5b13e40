package planner

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/parse"
)

// CALL [catalog.]system.name(args) runs a table maintenance procedure
// when the statement is planned. Package statement knows the procedures
// and runs them; the query path recognises CALL (Bind, Plan) and asks the
// Procedures the executor installed for the result as a query, which it
// plans like an EXPLAIN: one endpoint whose worker returns the rows.

// Procedures runs the CALL statements of the query path; statement.New
// installs the executor's (SetProcedures).
type Procedures interface {
	// CallShape returns a query with exactly the result columns of the
	// CALL and no rows, without running the procedure.
	CallShape(ctx context.Context, s Session, c *parse.Call) (string, error)
	// Call runs the CALL and returns a query over its result rows, of
	// CallShape's columns.
	Call(ctx context.Context, s Session, c *parse.Call) (string, error)
}

// SetProcedures installs what runs CALL statements (statement.New calls
// it); the last one installed runs them.
func (p *Planner) SetProcedures(pr Procedures) { p.procs.Store(&pr) }

func init() {
	registerQuery(parse.KindCall, queryRunner{
		bind: func(p *Planner, ctx context.Context, s Session, st *parse.Statement, _ []any) (*arrow.Schema, error) {
			return p.callSchema(ctx, s, st.Body.(*parse.Call))
		},
		plan: func(p *Planner, ctx context.Context, s Session, st *parse.Statement, workers []Worker, _ []any) (*Plan, error) {
			return p.call(ctx, s, st.Body.(*parse.Call), workers)
		},
	})
}

// procedures returns the installed Procedures, or an error when none is.
func (p *Planner) procedures() (Procedures, error) {
	pr := p.procs.Load()
	if pr == nil {
		return nil, fmt.Errorf("%w: CALL runs through statement.Executor", ErrUnsupported)
	}
	return *pr, nil
}

// callSchema is the result schema of a CALL, without running it.
func (p *Planner) callSchema(ctx context.Context, s Session, query *parse.Call) (*arrow.Schema, error) {
	pr, err := p.procedures()
	if err != nil {
		return nil, err
	}
	shape, err := pr.CallShape(ctx, s, query)
	if err != nil {
		return nil, err
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.QuerySchema(ctx, shape)
}

// call runs a CALL and plans its result rows as one endpoint.
func (p *Planner) call(ctx context.Context, s Session, query *parse.Call, workers []Worker) (*Plan, error) {
	pr, err := p.procedures()
	if err != nil {
		return nil, err
	}
	schema, err := p.callSchema(ctx, s, query)
	if err != nil {
		return nil, err
	}
	// A procedure's own plans run on the workers (it writes).
	sql, err := pr.Call(WithoutAnswers(ctx), s, query)
	if err != nil {
		return nil, err
	}
	return p.rowsPlan(ctx, workers, schema, sql, "the procedure's rows")
}
