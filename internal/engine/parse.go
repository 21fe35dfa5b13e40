package engine

import (
	"context"
	"fmt"
)

// SerializeSQL returns DuckDB's JSON AST of a SELECT statement
// (json_serialize_sql). The JSON has "error": true and "error_message" when
// DuckDB cannot parse the text or it is not a SELECT.
func (c *Conn) SerializeSQL(ctx context.Context, query string) (string, error) {
	var out string
	err := c.c.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&out)
	if err != nil {
		return "", fmt.Errorf("engine: serialize sql: %w", err)
	}
	return out, nil
}

// DeserializeSQL turns a JSON AST from SerializeSQL back into SQL text.
func (c *Conn) DeserializeSQL(ctx context.Context, ast string) (string, error) {
	var out string
	err := c.c.QueryRowContext(ctx, "SELECT json_deserialize_sql(?::JSON)", ast).Scan(&out)
	if err != nil {
		return "", fmt.Errorf("engine: deserialize sql: %w", err)
	}
	return out, nil
}
