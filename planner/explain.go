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
func explainTarget(query string) (string, bool) { return afterKeyword(query, "EXPLAIN") }

// analyzeTarget returns the query of `ANALYZE <query>` (what follows
// EXPLAIN in EXPLAIN ANALYZE).
func analyzeTarget(inner string) (string, bool) { return afterKeyword(inner, "ANALYZE") }

// afterKeyword returns the text after text's first token when that token
// is the keyword kw (leading semicolons skipped).
func afterKeyword(text, kw string) (string, bool) {
	toks, err := sqltok.Tokenize(text)
	for len(toks) > 0 && toks[0].IsOp(";") {
		toks = toks[1:]
	}
	if err != nil || len(toks) == 0 || !toks[0].Is(kw) {
		return "", false
	}
	return text[toks[0].End:], true
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
	if q, ok := analyzeTarget(inner); ok {
		inner = q
	}
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
	return p.linesPlan(ctx, workers, schema, planLines(plan))
}

// planLines are the "key<TAB>value" lines of plan's Explain.
func planLines(plan *Plan) []string {
	return strings.Split(strings.TrimSuffix(plan.Explain, "\n"), "\n")
}

// linesPlan answers EXPLAIN's lines (key<TAB>value) as the rows (item,
// value) of a query with no table, served by one worker.
func (p *Planner) linesPlan(ctx context.Context, workers []Worker, schema *arrow.Schema, lines []string) (*Plan, error) {
	t := &wire.Ticket{QueryID: newQueryID(ctx), ExpiresAt: time.Now().Add(p.opts.TicketTTL), SQL: explainSQL(lines)}
	pb := &planBuilder{p: p, workers: workers, stamp: stampOf(ctx), plan: &Plan{QueryID: t.QueryID, Schema: schema, Strategy: Gather}, expires: t.ExpiresAt}
	t.Schema = pb.ticket(nil, "", schema).Schema
	pb.plan.ExpiresAt = t.ExpiresAt
	pb.endpoint(t)
	return pb.finish()
}
