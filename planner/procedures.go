package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/wire"
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
	// CALL query and no rows, without running the procedure.
	CallShape(ctx context.Context, s Session, query string) (string, error)
	// Call runs the CALL query and returns a query over its result rows,
	// of CallShape's columns.
	Call(ctx context.Context, s Session, query string) (string, error)
}

// SetProcedures installs what runs CALL statements (statement.New calls
// it); the last one installed runs them.
func (p *Planner) SetProcedures(pr Procedures) { p.procs.Store(&pr) }

// ParseStatement tokenizes one statement, without its trailing
// semicolons, and returns a parser at its first token.
func ParseStatement(query string) (*Parser, error) {
	toks, err := ddlTokens(query)
	if err != nil {
		return nil, err
	}
	return &Parser{src: query, toks: toks}, nil
}

// isCall reports whether query is a CALL statement.
func isCall(query string) bool { return sqltok.FirstWord(query) == "CALL" }

// procedures returns the installed Procedures, or an error when none is.
func (p *Planner) procedures() (Procedures, error) {
	pr := p.procs.Load()
	if pr == nil {
		return nil, fmt.Errorf("%w: CALL runs through statement.Executor", ErrUnsupported)
	}
	return *pr, nil
}

// callSchema is the result schema of a CALL, without running it.
func (p *Planner) callSchema(ctx context.Context, s Session, query string) (*arrow.Schema, error) {
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
func (p *Planner) call(ctx context.Context, s Session, query string, workers []Worker) (*Plan, error) {
	pr, err := p.procedures()
	if err != nil {
		return nil, err
	}
	schema, err := p.callSchema(ctx, s, query)
	if err != nil {
		return nil, err
	}
	sql, err := pr.Call(ctx, s, query)
	if err != nil {
		return nil, err
	}
	t := &wire.Ticket{QueryID: newQueryID(ctx), ExpiresAt: time.Now().Add(p.opts.TicketTTL), SQL: sql}
	pb := &planBuilder{p: p, workers: workers, stamp: stampOf(ctx),
		plan: &Plan{QueryID: t.QueryID, Schema: schema, Strategy: Gather}, expires: t.ExpiresAt}
	t.Schema = pb.ticket(nil, "", schema).Schema
	pb.plan.ExpiresAt = t.ExpiresAt
	pb.endpoint(t)
	return pb.finish()
}
