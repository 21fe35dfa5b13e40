package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/parse"
)

// The session in SQL: USE changes the defaults for unqualified names, and
// current_catalog() / current_schema() (and current_database()) answer
// them, as DuckDB's do for its own session.

// Use runs `USE catalog.schema` or `USE schema` (st, a USE) and returns
// the session it sets. Each name resolves as in queries (names.go) and
// must exist.
func (p *Planner) Use(ctx context.Context, s Session, st *parse.Statement) (Session, error) {
	parts := st.Body.(*parse.Use).Name
	out := s
	var err error
	if len(parts) == 2 {
		if out.Catalog, err = p.resolveCatalog(ctx, parts[0], st.Quoted(parts[0])); err != nil {
			return s, err
		}
		parts = parts[1:]
	} else if _, cerr := p.resolveCatalog(ctx, parts[0], true); cerr == nil {
		// USE c names a catalog when one is called so: its schema is the
		// session's schema name, if it has one, as in DuckDB.
		out.Catalog = parts[0]
		if _, err := p.resolveSchema(ctx, out.Catalog, out.Schema, true); err != nil {
			return s, err
		}
		return out, nil
	}
	if out.Schema, err = p.resolveSchema(ctx, out.Catalog, parts[0], st.Quoted(parts[0])); err != nil {
		return s, err
	}
	return out, nil
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
