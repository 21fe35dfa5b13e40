package planner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/icefloe/icefloe/internal/engine"
	"github.com/icefloe/icefloe/internal/resultcache"
)

// The exact result cache (Options.ResultCache). A query's result is kept
// under a key of everything it depends on, so it is reused exactly until
// one of those changes:
//
//   - the bound plan: DuckDB's tree of the query after resolution, with
//     its parameter values substituted as typed constants, the views it
//     expanded and the VALUES of the information_schema and
//     system.runtime tables it reads (the bind key, bindcache.go), and
//     the parameters' Go types and values once more;
//   - every table it reads: the metadata location resolution pinned
//     (asked of the catalog for every query, so a commit through any
//     coordinator or any other writer gives another key), its snapshot,
//     schema, projected columns and time-travel snapshot;
//   - who asks: the principal and its grants version (authz), so no
//     answer crosses principals whose grants differ;
//   - the session settings that change answers (catalog, schema, the
//     write-audit-publish branch).
//
// Queries whose answer changes from run to run are not kept: those that
// call a function DuckDB does not call consistent (duckdb_functions()'s
// stability: random(), uuid(), now(), current_timestamp, nextval, …) or
// sample rows. A session turns the cache off with SET result_cache = off.
// Only the result of a plan with one endpoint is kept (aggregates,
// top-N, gathers: the results dashboards repeat), read through the
// coordinator once so it can keep a copy (flightsql); a hit is an Answer.

// unstableQuery lists the functions whose value may change between
// runs with the same arguments: DuckDB's stability says so, or a macro's
// definition calls such a function (DuckDB calls its macros consistent
// whatever they call, e.g. current_localtimestamp).
const unstableQuery = `WITH f AS (SELECT lower(function_name) AS name, function_type, stability, macro_definition FROM duckdb_functions()),
	u AS (SELECT DISTINCT name FROM f WHERE stability IS DISTINCT FROM 'CONSISTENT' AND function_type NOT IN ('macro', 'table_macro'))
SELECT name FROM u
UNION SELECT f.name FROM f, u WHERE f.function_type IN ('macro', 'table_macro')
	AND regexp_matches(lower(f.macro_definition), '(^|[^a-z0-9_])' || u.name || '\s*\(')`

// valueFunctions are the SQL value functions DuckDB's parser leaves as
// column references (its binder makes them calls when no column has the
// name), and the two functions DuckDB calls consistent because its
// binder fixes their value to the statement's start
// (current_localtime, current_localtimestamp): each changes between
// runs.
var valueFunctions = map[string]bool{"current_date": true, "current_time": true, "current_timestamp": true,
	"localtime": true, "localtimestamp": true, "current_localtime": true, "current_localtimestamp": true}

// changing says why the bound query's answer may change from run to run
// on the same tables, "" when it may not.
func (p *Planner) changing(ctx context.Context, conn *engine.Conn, b *bound) (string, error) {
	unstable, err := p.unstable.loadQuery(ctx, conn, unstableQuery)
	if err != nil {
		return "", err
	}
	why := ""
	walk(b.ast.root, func(n node) bool {
		if why != "" {
			return false
		}
		switch {
		case n["sample"] != nil:
			why = "it samples rows"
		case str(n, "class") == "FUNCTION" && (unstable[strings.ToLower(str(n, "function_name"))] || valueFunctions[strings.ToLower(str(n, "function_name"))]):
			why = "it calls " + str(n, "function_name") + "(), whose value changes between runs"
		case str(n, "class") == "COLUMN_REF":
			if names := anyList(n["column_names"]); len(names) == 1 {
				if name, _ := names[0].(string); valueFunctions[strings.ToLower(name)] {
					why = "it reads " + name + ", whose value changes between runs"
				}
			}
		}
		return why == ""
	})
	return why, nil
}

// resultKey is the key of b's result (see above).
func (p *Planner) resultKey(ctx context.Context, s Session, b *bound, args []any) resultcache.Key {
	parts := []string{"result.v1", b.key, p.GrantsVersion(ctx), s.Catalog, s.Schema, s.WAPBranch}
	for _, in := range b.inputs {
		parts = append(parts, in.ref.String(), strconv.FormatInt(in.snapshot, 10))
	}
	for _, a := range args {
		parts = append(parts, fmt.Sprintf("%T\x00%#v", a, a))
	}
	return resultcache.NewKey(parts...)
}

// recallResult answers b from the result cache on a hit. On a miss it
// returns the key its result may be kept under; notes are the EXPLAIN
// lines either way.
func (p *Planner) recallResult(ctx context.Context, conn *engine.Conn, s Session, b *bound, args []any) (*Plan, []string, *resultcache.Key, error) {
	cache := p.opts.ResultCache
	switch {
	case cache == nil || b.key == "":
		return nil, nil, nil, nil
	case s.ResultCacheOff:
		return nil, []string{"result cache\toff for this session (SET result_cache = off)"}, nil, nil
	}
	why, err := p.changing(ctx, conn, b)
	if err != nil {
		return nil, nil, nil, err
	}
	if why != "" {
		return nil, []string{"result cache\tnot used: " + why}, nil, nil
	}
	key := p.resultKey(ctx, s, b, args)
	e, ok := cache.Get(key)
	if !ok {
		return nil, []string{"result cache\tmiss, key " + key.String()}, &key, nil
	}
	a := &Answer{IPC: e.IPC, Rows: e.Rows, Source: "result cache"}
	var lines []string
	for _, in := range b.inputs {
		lines = append(lines, fmt.Sprintf("table\t%s snapshot %d, metadata %s", in.ref, snapshotID(in), in.pinned.MetadataLocation))
	}
	lines = append(lines, fmt.Sprintf("result cache\thit, key %s, age %s, %d rows", key, e.Age().Round(time.Millisecond), e.Rows))
	return p.answerPlan(ctx, b.schema, a, lines), nil, nil, nil
}
