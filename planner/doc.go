// Package planner turns SQL into a distributed plan: it parses with DuckDB's
// parser, resolves and pins every table through catalog, binds the result
// schema in DuckDB against empty stand-ins, prunes with Iceberg expressions,
// plans and groups file tasks, chooses a strategy and seals one ticket per
// endpoint. It also runs the DDL and simple DML the coordinator executes.
package planner
