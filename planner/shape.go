package planner

import (
	"context"
	"fmt"
	"sync"

	"github.com/icefloe/icefloe/internal/engine"
)

// aggregateNames are DuckDB's aggregate function names, loaded once.
type aggregateNames struct {
	once  sync.Once
	names map[string]bool
	err   error
}

func (a *aggregateNames) load(ctx context.Context, conn *engine.Conn) (map[string]bool, error) {
	return a.loadQuery(ctx, conn, "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'aggregate'")
}

// loadQuery runs query, which lists function names, the first time it
// is called; every call returns that first answer.
func (a *aggregateNames) loadQuery(ctx context.Context, conn *engine.Conn, query string) (map[string]bool, error) {
	a.once.Do(func() {
		rows, err := conn.DB().QueryContext(ctx, query)
		if err != nil {
			a.err = fmt.Errorf("planner: list functions: %w", err)
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
