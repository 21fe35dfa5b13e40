// Package statement runs every statement that is not a planned query: DDL,
// INSERT, UPDATE, DELETE, MERGE, TRUNCATE, ALTER, bulk ingest, CALL
// procedures and table maintenance, and the EXPLAIN of a write. Its
// Executor wraps a *planner.Planner, which plans queries (and the SELECT a
// write reads); what the Flight SQL server and cmd hold for execution is
// an *Executor. statement imports planner, never the other way round, and
// worker imports neither: what crosses to a worker is a wire value.
package statement
