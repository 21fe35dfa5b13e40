// Package statement runs the statements that are not planned queries.
// Its Executor wraps a *planner.Planner, so it plans queries exactly as
// the planner does, and is what the Flight SQL server and internal/cluster
// hold for execution. statement imports planner, never the reverse, and
// worker imports neither: what crosses to a worker is a wire value.
//
// It runs CREATE and DROP SCHEMA, DROP TABLE, TRUNCATE (exec.go
// dispatches them), CREATE and DROP VIEW (views.go) and ALTER TABLE
// (alter.go: schema, property, partition and identifier-field evolution,
// RENAME, and the branch and tag DDL in refs.go; ALTER TABLE … EXECUTE
// it hands to planner.Planner.AlterMaintenance), answers EXPLAIN of a write by running the write as a dry run
// (explainwrite.go), and tells the workers of dropped tables (revoke.go).
// The other statements (CREATE TABLE, INSERT, UPDATE, DELETE, MERGE, bulk
// ingest, CALL procedures, maintenance) still run in planner, to which
// the Executor hands them, until they move here too (issue 13).
package statement
