package planner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/sqltok"
	"github.com/icefloe/icefloe/planner/plan"
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
	return p.LinesPlan(ctx, workers, schema, planLines(plan))
}

// planLines are the "key<TAB>value" lines of plan's Explain.
func planLines(plan *Plan) []string {
	return strings.Split(strings.TrimSuffix(plan.Explain, "\n"), "\n")
}

// LinesPlan answers EXPLAIN's lines (key<TAB>value) as the rows (item,
// value) of a query with no table, served by one of workers; schema is
// the EXPLAIN's (Bind of the EXPLAIN statement).
func (p *Planner) LinesPlan(ctx context.Context, workers []Worker, schema *arrow.Schema, lines []string) (*Plan, error) {
	t := &wire.Ticket{QueryID: newQueryID(ctx), ExpiresAt: time.Now().Add(p.opts.TicketTTL), SQL: explainSQL(lines)}
	pb := &planBuilder{p: p, workers: workers, stamp: stampOf(ctx), plan: &Plan{QueryID: t.QueryID, Schema: schema, Strategy: Gather}, expires: t.ExpiresAt}
	t.Schema = pb.ticket(nil, "", schema).Schema
	pb.plan.ExpiresAt = t.ExpiresAt
	pb.endpoint(t)
	return pb.finish()
}

// explainLines are EXPLAIN's lines of a planned query, printed from its
// plan: each input (its pinned snapshot, columns, pushed filter, files
// and estimated rows), the strategy, the fragments, the rules tried and
// the plan tree with its estimates.
func explainLines(res *plan.Result, scans []*plan.Scan) []string {
	var out []string
	add := func(key, format string, args ...any) { out = append(out, key+"\t"+fmt.Sprintf(format, args...)) }
	for _, s := range scans {
		add("table", "%s as %s snapshot %d, metadata %s", s.Table, s.View, s.Snapshot, s.Metadata)
		cols := "*"
		if s.Columns != nil {
			cols = strings.Join(s.Columns, ", ")
		}
		add("columns", "%s: %s", s.Table, cols)
		if s.Filter != "" {
			add("filter", "%s: %s", s.Table, s.Filter)
		}
		add("files", "%s: %d of %d files, %d of %d bytes after pruning, %d groups", s.Table, s.Files, s.FilesBefore, s.Bytes, s.BytesBefore, len(s.Groups))
		add("rows", "%s: %s", s.Table, s.RowsNote)
	}
	if len(res.Endpoints) > 0 { // else the rule that sealed its tickets noted it
		add("strategy", "%s", res.Label)
	}
	plan.Walk(res, func(n plan.Node) {
		f, ok := n.(*plan.Fragment)
		if !ok {
			return
		}
		switch {
		case f.Role == "child":
			if f.Passthrough {
				add("passthrough", "workers stream %s's scan fragments without DuckDB", f.Per.Table)
			}
			return
		case f.Role == "scan" || f.Role == "gather":
			add("fragment", "%s", f.SQL)
		default:
			add("fragment", "%s: %s", f.Role, f.SQL)
		}
		if f.Passthrough {
			add("passthrough", "workers stream the scan without DuckDB")
		}
		if f.Direct {
			add("inputs", "read on the gathering worker with DuckDB's Parquet reader")
		}
	})
	for _, v := range res.Verdicts {
		add("rule", "%s", v)
	}
	return append(out, treeLines(res)...)
}

// treeLines are the plan tree's lines, one "plan" line per node.
func treeLines(res *plan.Result) []string {
	text := plan.Format(res)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "plan\t" + l
	}
	return lines
}
