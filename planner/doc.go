// Package planner turns SQL into a distributed plan: it parses with DuckDB's
// parser, resolves and pins every table through catalog, binds the result
// schema in DuckDB against empty stand-ins, prunes with Iceberg expressions,
// plans and groups file tasks, chooses a strategy and seals one ticket per
// endpoint.
//
// Statement execution is moving out to package statement (issue 13), whose
// Executor wraps a Planner; statement imports planner, never the reverse.
// What statement uses from here is the statement parser (Parser,
// ParseUpdate, PartitionItem), write targets (WriteTarget, LoadTarget),
// one commit (Commit), DuckDB's reading of a column list and of a
// query's columns (Planner.ParseColumns, Planner.QueryColumns), the
// decimal-partition check (CheckDecimalPartitions), authorization
// (Planner.Authorize), the schema of a new table or view
// (Planner.ExistingSchema), a catalog's views (Planner.Views; queries
// expand them here), a metadata commit (Planner.CommitMeta), the dry-run
// notes of an EXPLAIN of a write (DryRun) and the plan of EXPLAIN lines
// (LinesPlan). The DDL and DML
// that have not moved yet (CREATE TABLE, ALTER TABLE … EXECUTE, INSERT,
// UPDATE, DELETE, MERGE, bulk ingest, CALL procedures) still run here,
// reached through the Executor.
package planner
