package planner

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/resultcache"
)

// Answers the coordinator gives itself. A statement whose answer is tiny
// and needs no table data is answered on the coordinator, with no worker
// and no second hop: a query that reads no table (SELECT 1, SHOW, the
// information_schema and system.runtime tables, EXPLAIN's lines), a
// count Iceberg's manifests hold (metadata.go), and a result the exact
// result cache kept (resultcache.go). The plan then has no endpoints but
// an Answer, whose rows flightsql hands the client in the ticket of one
// endpoint without locations ("this server").

// Local is the strategy of a plan the coordinator answers itself.
const Local Strategy = "local"

// DefaultMaxAnswerBytes bounds the rows of an answer the coordinator
// gives itself: a query of no table whose result is larger runs on a
// worker as before.
const DefaultMaxAnswerBytes = resultcache.DefaultMaxEntryBytes

// Answer is the result of a plan the coordinator answers itself.
type Answer struct {
	// IPC is the result as one Arrow IPC stream with the plan's schema.
	IPC  []byte
	Rows int64
	// Source says where the rows come from: "coordinator", "metadata"
	// or "result cache".
	Source string
}

// Fill says the result of a plan's one endpoint may be kept in the
// result cache under Key, by whoever reads it whole.
type Fill struct {
	Key resultcache.Key
}

// answersKey marks a context whose plans may be answers (WithAnswers).
type answersKey struct{}

// WithAnswers lets the plans made under ctx be answers the coordinator
// gives itself (Plan.Answer) and ask for their result to be kept
// (Plan.Fill): what a client reads. Without it every plan has worker
// endpoints, which is what writes and other internal callers run.
func WithAnswers(ctx context.Context) context.Context {
	return context.WithValue(ctx, answersKey{}, true)
}

// WithoutAnswers undoes WithAnswers for the plans made under ctx.
func WithoutAnswers(ctx context.Context) context.Context {
	if !answering(ctx) {
		return ctx
	}
	return context.WithValue(ctx, answersKey{}, false)
}

func answering(ctx context.Context) bool {
	on, _ := ctx.Value(answersKey{}).(bool)
	return on
}

// answerPlan is a plan answered with a; lines are its EXPLAIN lines
// ("key<TAB>value", icefloe's own text: they are shown redacted too).
func (p *Planner) answerPlan(ctx context.Context, schema *arrow.Schema, a *Answer, lines []string) *Plan {
	lines = append(lines, "strategy\tlocal: answered on the coordinator ("+a.Source+"), no worker")
	pl := &Plan{QueryID: newQueryID(ctx), Strategy: Local, Schema: schema, Answer: a,
		ExpiresAt: time.Now().Add(p.opts.TicketTTL)}
	pl.Explain = joinLines(lines)
	pl.Redacted = &RedactedPlan{lines: lines}
	return pl
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// runHere runs sql on the coordinator's conn and returns its rows with
// schema, or nil when they are more than max bytes or do not have the
// schema's types (the caller then plans the query for a worker).
func runHere(ctx context.Context, conn *engine.Conn, sql string, schema *arrow.Schema, max int64) (*Answer, error) {
	rdr, err := conn.Query(ctx, sql, engine.QueryOptions{})
	if err != nil {
		return nil, bindError(err)
	}
	defer rdr.Release()
	if !sameSchema(rdr.Schema(), schema) {
		return nil, nil
	}
	return encodeRows(rdr, schema, max)
}

// encodeRows writes the records of rdr as one IPC stream with schema
// (whose names and types they have), or nil past max bytes.
func encodeRows(rdr array.RecordReader, schema *arrow.Schema, max int64) (*Answer, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	a := &Answer{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		out := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := w.Write(out)
		out.Release()
		if err != nil {
			return nil, err
		}
		a.Rows += rec.NumRows()
		if int64(buf.Len()) > max {
			return nil, nil
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, bindError(err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, nil
	}
	a.IPC = buf.Bytes()
	return a, nil
}

// readsNothing tells whether the bound query reads no table and no table
// function and recurses nowhere: what the coordinator may run itself.
// A query of no table can still be costly (a recursive CTE, a range of
// a billion rows): those go to a worker as before.
func readsNothing(b *bound) bool {
	if len(b.inputs) > 0 {
		return false
	}
	cheap := true
	walk(b.ast.root, func(n node) bool {
		switch {
		case str(n, "type") == "TABLE_FUNCTION", str(n, "type") == "RECURSIVE_CTE_NODE":
			cheap = false
		}
		return cheap
	})
	return cheap
}

// answerFirst answers the bound query on the coordinator when it can: a
// query of no table (run here), a count from the manifests, a result
// the cache kept. Otherwise it returns the EXPLAIN lines of what was
// tried and, when the result may be kept, the key to keep it under.
func (p *Planner) answerFirst(ctx context.Context, conn *engine.Conn, s Session, b *bound, args []any) (*Plan, []string, *resultcache.Key, error) {
	if readsNothing(b) {
		a, err := runHere(ctx, conn, b.sql, b.schema, DefaultMaxAnswerBytes)
		if err != nil || a != nil {
			if a != nil {
				a.Source = "coordinator"
				return p.answerPlan(ctx, b.schema, a, []string{"answered here\tthe query reads no table: run on the coordinator"}), nil, nil, nil
			}
			return nil, nil, nil, err
		}
		return nil, []string{"answered here\tno: the result is over " + fmt.Sprint(DefaultMaxAnswerBytes) + " bytes"}, nil, nil
	}
	var notes []string
	pl, why, err := p.answerFromMetadata(ctx, b)
	if err != nil || pl != nil {
		return pl, nil, nil, err
	}
	if why != "" {
		notes = append(notes, "metadata\tnot answered from metadata: "+why)
	}
	pl, more, key, err := p.recallResult(ctx, conn, s, b, args)
	if err != nil || pl != nil {
		return pl, nil, nil, err
	}
	return nil, append(notes, more...), key, nil
}
