package planner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/wire"
)

// explainTarget returns the query of `EXPLAIN <query>`.
func explainTarget(query string) (string, bool) {
	toks, err := sqltok.Tokenize(query)
	for len(toks) > 0 && toks[0].IsOp(";") {
		toks = toks[1:]
	}
	if err != nil || len(toks) == 0 || !toks[0].Is("EXPLAIN") {
		return "", false
	}
	return query[toks[0].End:], true
}

// explainSQL renders plan lines as a query with columns item, value.
func explainSQL(lines []string) string {
	rows := make([]infoRow, len(lines))
	for i, l := range lines {
		k, v, _ := strings.Cut(l, "\t")
		rows[i] = infoRow{k, v}
	}
	return valuesSQL([]infoColumn{{"item", "VARCHAR"}, {"value", "VARCHAR"}}, rows)
}

func (p *Planner) explainSchema(ctx context.Context, s Session, inner string) (*arrow.Schema, error) {
	if k := sqltok.FirstWord(inner); k == "ANALYZE" || k == "EXPLAIN" || k == "CALL" {
		return nil, fmt.Errorf("%w: EXPLAIN %s", ErrUnsupported, k)
	}
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.QuerySchema(ctx, explainSQL([]string{"strategy\tx"}))
}

// explain plans inner and answers its distributed plan as rows (item,
// value), served like a query with no table.
func (p *Planner) explain(ctx context.Context, s Session, inner string, workers []Worker) (*Plan, error) {
	schema, err := p.explainSchema(ctx, s, inner)
	if err != nil {
		return nil, err
	}
	plan, err := p.Plan(ctx, s, inner)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(plan.Explain, "\n"), "\n")
	t := &wire.Ticket{QueryID: newQueryID(), ExpiresAt: time.Now().Add(p.opts.TicketTTL), SQL: explainSQL(lines)}
	pb := &planBuilder{p: p, workers: workers, stamp: stampOf(ctx), plan: &Plan{QueryID: t.QueryID, Schema: schema, Strategy: Gather}, expires: t.ExpiresAt}
	t.Schema = pb.ticket(nil, "", schema).Schema
	pb.plan.ExpiresAt = t.ExpiresAt
	pb.endpoint(t)
	return pb.finish()
}
