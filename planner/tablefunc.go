package planner

import (
	"fmt"
	"strings"
)

// pureTableFunctions are the table functions client SQL may call: they
// compute rows from their arguments alone and read no file, URL, setting
// or catalog.
var pureTableFunctions = map[string]bool{
	"generate_series": true, "range": true, "unnest": true,
}

// refuseTableFunction refuses a table function in FROM unless it is one of
// pureTableFunctions, unqualified (a schema could name a macro), with
// arguments that are expressions without queries: a query inside would
// read tables past the planner's resolution.
func refuseTableFunction(ref node) error {
	fn, _ := ref["function"].(node)
	name := "?"
	if fn != nil {
		name = str(fn, "function_name")
	}
	if fn == nil || !pureTableFunctions[strings.ToLower(name)] || str(fn, "schema") != "" || str(fn, "catalog") != "" {
		return fmt.Errorf("%w: table function %s is not allowed (only generate_series, range and unnest are)", ErrRefused, name)
	}
	var sub bool
	walk(fn["children"], func(n node) bool {
		if str(n, "class") == "SUBQUERY" || isTableRef(n) {
			sub = true
		}
		return !sub
	})
	if sub {
		return fmt.Errorf("%w: a query as an argument of %s", ErrUnsupported, name)
	}
	return nil
}
