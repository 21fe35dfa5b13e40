// Package statement runs the statements that are not planned queries.
// Its Executor has its own Options (each defaulting to its planner's) and
// holds the *planner.Planner it plans queries with as a field, forwarding
// Plan, Bind, Use, Parameters and Renew to it; it is what the Flight SQL
// server and cluster hold for execution. statement imports planner, never the reverse, and
// worker imports neither: what crosses to a worker is a wire value.
//
// It runs every update statement, parsed by internal/parse: Exec runs the
// runner the statement's kind registered (exec.go holds the registry;
// each file registers its kinds in an init): CREATE
// and DROP SCHEMA, CREATE TABLE with a column list or AS (create.go),
// CREATE OR REPLACE TABLE (orreplace.go), INSERT with parameter batches
// (insert.go), bulk ingest and its replace mode (ingest.go, replace.go),
// UPDATE, DELETE and MERGE (dml.go, eqdeletes.go; planner plans them),
// DROP TABLE, TRUNCATE, CREATE and DROP VIEW (views.go) and ALTER TABLE
// (alter.go: one function per typed action — schema, property,
// partition and identifier-field evolution, RENAME; the branch and tag
// DDL in refs.go; ALTER TABLE … EXECUTE in maintenance.go). It runs the
// CALL procedures (procedures.go: the registry and argument binding; the procedures in
// maintenance.go, compact.go, housekeeping.go, posdeletes.go,
// refprocs.go, partstats.go and runtime.go) itself: Executor.Plan runs a
// CALL and has the planner plan its result rows (planner.PlanRows);
// the planner calls nothing back. It answers
// EXPLAIN of a write by running the write as a dry run (explainwrite.go),
// and tells the workers of dropped tables (revoke.go).
//
// It runs the write core too (write.go): a statement's write fragments
// on the workers through the Flight pool, its commits through
// internal/commit, and the partition statistics a table asks for after
// each commit (rowids.go gives v3 files their first_row_id).
package statement
