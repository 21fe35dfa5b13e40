package planner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/parse"
	"github.com/icefloe/icefloe/planner/plan"
	"github.com/icefloe/icefloe/wire"
)

func init() {
	registerQuery(parse.KindExplain, queryRunner{bind: (*Planner).bindExplain, plan: (*Planner).planExplain})
}

// bindExplain is the schema of EXPLAIN's rows (item, value).
func (p *Planner) bindExplain(ctx context.Context, _ Session, _ *parse.Statement, _ []any) (*arrow.Schema, error) {
	return p.explainSchema(ctx)
}

// planExplain answers EXPLAIN [ANALYZE] of a query; EXPLAIN of a write
// is statement.Executor's (a dry run). args bind the explained
// statement's parameters.
func (p *Planner) planExplain(ctx context.Context, s Session, st *parse.Statement, workers []Worker, args []any) (*Plan, error) {
	ex := st.Body.(*parse.Explain)
	if ex.Analyze {
		return p.explainAnalyze(ctx, s, ex.Inner, workers, args)
	}
	if ex.Inner.Info().DryRun {
		return nil, fmt.Errorf("%w: EXPLAIN of a write here; statement.Executor runs it as a dry run", ErrUnsupported)
	}
	return p.explain(ctx, s, ex.Inner, workers, args)
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

// explainSchema is the schema of EXPLAIN's rows.
func (p *Planner) explainSchema(ctx context.Context) (*arrow.Schema, error) {
	conn, err := p.opts.Engine.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.QuerySchema(ctx, explainSQL([]string{"strategy\tx"}))
}

// explain plans inner and answers its distributed plan as rows (item,
// value), served like a query with no table.
func (p *Planner) explain(ctx context.Context, s Session, inner *parse.Statement, workers []Worker, args []any) (*Plan, error) {
	schema, err := p.explainSchema(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := p.Plan(ctx, s, inner, args...)
	if err != nil {
		return nil, err
	}
	if plan.restricted != nil {
		return nil, plan.restricted
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
