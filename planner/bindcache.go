package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
)

// Binding memo. Every query is bound at least twice (a prepared statement
// is bound when it is created and again when it is planned; Python ADBC
// prepares every statement), and each bind asked DuckDB to parse the
// text, print the rewritten AST back, create a stand-in table per input,
// run the query over them and name its types: most of a tiny query's cost
// on the coordinator. What they answer depends only on the query text, or
// on the rewritten AST (which carries the bound parameter values) and the
// pinned table versions it reads, so both are memoised in the mounts'
// cache: the parse by query text, the bound SQL, schema and DuckDB types
// by AST and inputs. Resolution (each table's current metadata location)
// and column and filter pruning still run for every query.

// serialize is DuckDB's JSON AST of query, memoised by its text.
func (p *Planner) serialize(ctx context.Context, conn *engine.Conn, query string) (string, error) {
	return p.memoAST(ctx, conn, "ast\x00"+query, func() string { return query })
}

// serializeView is DuckDB's JSON AST of a view's query, memoised by the
// view's text: the view's query is parsed (internal/parse, for the
// Iceberg rewrites) once per text, not once per query that reads it. A
// view whose text is no query goes to DuckDB as it is, which refuses it.
func (p *Planner) serializeView(ctx context.Context, conn *engine.Conn, sql string) (string, error) {
	return p.memoAST(ctx, conn, "view\x00"+sql, func() string {
		if st, err := parse.Parse(sql); err == nil && st.Query() != nil {
			return st.Query().Duck
		}
		return sql
	})
}

// memoAST is json_serialize_sql of the text duck gives, memoised under
// key (which holds everything the text depends on).
func (p *Planner) memoAST(ctx context.Context, conn *engine.Conn, key string, duck func() string) (string, error) {
	cache := p.opts.Mounts.Cache()
	if v, ok := cache.Recall(key); ok {
		return v.(string), nil
	}
	text, err := conn.SerializeSQL(ctx, duck())
	if err != nil {
		return "", err
	}
	cache.Remember(key, text)
	return text, nil
}

// bindResult is what binding adds to a resolved query.
type bindResult struct {
	sql       string
	schema    *arrow.Schema
	duckTypes []string
}

// bindKey names a bind: the principal it was bound for, the rewritten AST
// and, per input, the table version and projection its stand-in is built
// from. The memo is consulted only after resolution, which authorizes
// every table read for the caller, and the principal in the key keeps
// one principal's binds from ever answering another's.
func bindKey(principal, doc string, inputs []*input) string {
	var b strings.Builder
	b.WriteString("bind\x00")
	b.WriteString(principal)
	b.WriteString("\x00")
	b.WriteString(doc)
	for _, in := range inputs {
		cols := "*"
		if in.cols != nil {
			cols = strings.Join(in.cols, "\x01")
		}
		snap := int64(0)
		if s := in.pinned.Table.CurrentSnapshot(); s != nil {
			snap = s.SnapshotID
		}
		// in.snapshot: a time-travel read binds against that snapshot's
		// schema, which the current snapshot's id does not name.
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%d\x00%d\x00%d\x00%s\x00%s", in.view, in.pinned.MetadataLocation, snap, in.snapshot,
			in.pinned.Table.Metadata().CurrentSchema().ID, in.meta, cols)
	}
	return b.String()
}

func (p *Planner) recallBind(key string, b *bound) bool {
	v, ok := p.opts.Mounts.Cache().Recall(key)
	if !ok {
		return false
	}
	r := v.(*bindResult)
	b.sql, b.schema, b.duckTypes = r.sql, r.schema, r.duckTypes
	return true
}

func (p *Planner) rememberBind(key string, b *bound) {
	p.opts.Mounts.Cache().Remember(key, &bindResult{sql: b.sql, schema: b.schema, duckTypes: b.duckTypes})
}
