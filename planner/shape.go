package planner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/icefloe/icefloe/internal/engine"
)

// shape is what the planner learned of a query's form.
type shape struct {
	// scatter: the query over all rows equals the union of the query over
	// each group of its one input.
	scatter bool
	// reason says why a query is not scattered.
	reason string
}

// aggregateNames are DuckDB's aggregate function names, loaded once.
type aggregateNames struct {
	once  sync.Once
	names map[string]bool
	err   error
}

func (a *aggregateNames) load(ctx context.Context, conn *engine.Conn) (map[string]bool, error) {
	a.once.Do(func() {
		rows, err := conn.DB().QueryContext(ctx, "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'aggregate'")
		if err != nil {
			a.err = fmt.Errorf("planner: list aggregates: %w", err)
			return
		}
		defer rows.Close()
		a.names = map[string]bool{}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				a.err = err
				return
			}
			a.names[n] = true
		}
		a.err = rows.Err()
	})
	return a.names, a.err
}

// classifyShape decides whether the query is scatterable: one SELECT over
// one base table with no aggregate, window, subquery, CTE, DISTINCT, ORDER
// BY, LIMIT, sample or set operation. Everything else gathers.
func classifyShape(ast *parsed, inputs int, aggregates map[string]bool) shape {
	root, _ := ast.root["node"].(node)
	if root == nil {
		return shape{reason: "no query node"}
	}
	if inputs != 1 {
		return shape{reason: fmt.Sprintf("%d tables", inputs)}
	}
	if t := str(root, "type"); t != "SELECT_NODE" {
		return shape{reason: strings.ToLower(t)}
	}
	if mods, _ := root["modifiers"].([]any); len(mods) > 0 {
		m, _ := mods[0].(node)
		return shape{reason: strings.ToLower(str(m, "type"))}
	}
	if m, _ := root["cte_map"].(node); m != nil {
		if list, _ := m["map"].([]any); len(list) > 0 {
			return shape{reason: "common table expression"}
		}
	}
	from, _ := root["from_table"].(node)
	if from == nil || str(from, "type") != "BASE_TABLE" || from["sample"] != nil {
		return shape{reason: "not a single base table"}
	}
	for _, k := range []string{"group_expressions", "group_sets"} {
		if l, _ := root[k].([]any); len(l) > 0 {
			return shape{reason: "group by"}
		}
	}
	for _, k := range []string{"having", "qualify", "sample"} {
		if root[k] != nil {
			return shape{reason: k}
		}
	}
	reason := ""
	walk(root, func(n node) bool {
		if reason != "" {
			return false
		}
		switch str(n, "class") {
		case "WINDOW":
			reason = "window function"
		case "SUBQUERY":
			reason = "subquery"
		case "FUNCTION", "AGGREGATE":
			if aggregates[strings.ToLower(str(n, "function_name"))] {
				reason = "aggregate " + str(n, "function_name")
			}
		}
		return true
	})
	if reason != "" {
		return shape{reason: reason}
	}
	return shape{scatter: true}
}
