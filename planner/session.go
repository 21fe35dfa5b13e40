package planner

import (
	"context"
	"fmt"
	"strings"
)

// The session in SQL: USE changes the defaults for unqualified names, and
// current_catalog() / current_schema() (and current_database()) answer
// them, as DuckDB's do for its own session.

// Use runs `USE catalog.schema` or `USE schema` and returns the session it
// sets; ok is false for any other statement. Each name resolves as in
// queries (names.go) and must exist.
func (p *Planner) Use(ctx context.Context, s Session, query string) (Session, bool, error) {
	toks, err := ddlTokens(query)
	if err != nil || len(toks) == 0 || !toks[0].Is("USE") {
		return s, false, nil
	}
	ps := &Parser{src: query, toks: toks, Pos: 1}
	parts, err := ps.Name(2)
	if err != nil {
		return s, true, err
	}
	if err := ps.End(); err != nil {
		return s, true, err
	}
	quoted := quotedIdents(query)
	out := s
	if len(parts) == 2 {
		if out.Catalog, err = p.resolveCatalog(ctx, parts[0], quoted[parts[0]]); err != nil {
			return s, true, err
		}
		parts = parts[1:]
	} else if _, cerr := p.resolveCatalog(ctx, parts[0], true); cerr == nil {
		// USE c names a catalog when one is called so: its schema is the
		// session's schema name, if it has one, as in DuckDB.
		out.Catalog = parts[0]
		if _, err := p.resolveSchema(ctx, out.Catalog, out.Schema, true); err != nil {
			return s, true, err
		}
		return out, true, nil
	}
	if out.Schema, err = p.resolveSchema(ctx, out.Catalog, parts[0], quoted[parts[0]]); err != nil {
		return s, true, err
	}
	return out, true, nil
}

// sessionFunctions are the functions that answer the session's defaults.
var sessionFunctions = map[string]func(Session) string{
	"current_catalog":  func(s Session) string { return s.Catalog },
	"current_database": func(s Session) string { return s.Catalog },
	"current_schema":   func(s Session) string { return s.Schema },
}

// substituteSession replaces calls of the session functions with the
// session's values, named as DuckDB names the call.
func substituteSession(ast *parsed, s Session) {
	walk(ast.root, func(n node) bool {
		if str(n, "class") != "FUNCTION" || str(n, "schema") != "" || len(anyList(n["children"])) > 0 {
			return true
		}
		name := strings.ToLower(str(n, "function_name"))
		value, ok := sessionFunctions[name]
		if !ok {
			return true
		}
		alias := str(n, "alias")
		if alias == "" {
			alias = fmt.Sprintf("%s()", name)
		}
		loc := n["query_location"]
		for k := range n {
			delete(n, k)
		}
		n["class"], n["type"], n["alias"], n["query_location"] = "CONSTANT", "VALUE_CONSTANT", alias, loc
		n["value"] = node{"type": duckType("VARCHAR"), "is_null": false, "value": value(s)}
		return false
	})
}
