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
