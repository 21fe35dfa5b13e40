package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/parse"
)

// The plan cache (memo class "plan") and the parse memo (class "parse").
// Every query is bound at least twice (a prepared statement
// is bound when it is created and again when it is planned; Python ADBC
// prepares every statement), and each bind asked DuckDB to parse the
// text, print the rewritten AST back, create a stand-in table per input,
// run the query over them and name its types: most of a tiny query's cost
// on the coordinator. What they answer depends only on the query text, or
// on the rewritten AST (which carries the bound parameter values) and the
// pinned table versions it reads, so both are memoised in the mounts'
// cache: the parse by query text, the bound SQL, schema and DuckDB types
// by everything a bind depends on (planCacheKey). Resolution (each table's current metadata location)
// and column and filter pruning still run for every query.

// serialize is DuckDB's JSON AST of query, memoised by its text.
func (p *Planner) serialize(ctx context.Context, conn *engine.Conn, query string) (string, error) {
	return p.memoAST(ctx, conn, "parse\x00query\x00"+query, func() string { return query })
}

// serializeView is DuckDB's JSON AST of a view's query, memoised by the
// view's text: the view's query is parsed (internal/parse, for the
// Iceberg rewrites) once per text, not once per query that reads it. A
// view whose text is no query goes to DuckDB as it is, which refuses it.
func (p *Planner) serializeView(ctx context.Context, conn *engine.Conn, sql string) (string, error) {
	return p.memoAST(ctx, conn, "parse\x00view\x00"+sql, func() string {
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

// planCacheKey is everything a bind depends on: the plan cache's key
// (memo class "plan"). Each part names one way a cached bind could go
// stale, and TestPlanCacheStale changes each in turn:
//   - principal and grants: who binds and what they may read
//     (authz.Policy.GrantsVersion), so a bind never answers a principal
//     other than its own, nor the same one after its grants changed;
//   - session: every setting of the session (its defaults for
//     unqualified names, its write-audit-publish branch, …), whole;
//   - params: the Go types of the bound parameter values (their values
//     are constants in doc);
//   - doc: the normalized text — DuckDB's AST of the statement, rewritten
//     over the inputs' views with the session's values and the
//     parameters substituted;
//   - per input, the pinned table version: its view name, metadata
//     location, snapshot id, schema id, metadata table and projection.
//
// The memo is consulted only after resolution, which pins every table
// and authorizes every read for the caller.
type planCacheKey struct {
	principal, grants string
	session           Session
	params            []any
	doc               string
	inputs            []*input
}

// String is the key as the memo stores it.
func (k planCacheKey) String() string {
	var b strings.Builder
	b.WriteString("plan\x00")
	fmt.Fprintf(&b, "%q\x00%q\x00%#v\x00", k.principal, k.grants, k.session)
	for _, a := range k.params {
		fmt.Fprintf(&b, "%T,", a)
	}
	b.WriteString("\x00")
	b.WriteString(k.doc)
	for _, in := range k.inputs {
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
