// Package statement runs the statements that are not planned queries.
// Its Executor wraps a *planner.Planner, so it plans queries exactly as
// the planner does, and is what the Flight SQL server and internal/cluster
// hold for execution. statement imports planner, never the reverse, and
// worker imports neither: what crosses to a worker is a wire value.
//
// Exec and ExecBatch (exec.go) parse every update statement, bind its
// parameter rows and dispatch it. This package runs CREATE TABLE, with a
// column list or AS a query (create.go), CREATE OR REPLACE TABLE
// (orreplace.go), INSERT … VALUES and INSERT … SELECT (insert.go),
// UPDATE, DELETE (copy-on-write, merge-on-read, equality deletes:
// eqdeletes.go) and MERGE (dml.go), bulk
// ingest and its modes (ingest.go, replace.go; new tables are staged,
// staging.go), CREATE and DROP SCHEMA, DROP TABLE, TRUNCATE, CREATE and
// DROP VIEW (views.go) and ALTER TABLE (alter.go: schema, property,
// partition and identifier-field evolution, RENAME, and the branch and
// tag DDL in refs.go); it answers EXPLAIN of a write by running the write
// as a dry run (explainwrite.go), and tells the workers of dropped tables
// (revoke.go). The planner binds and plans what a write reads
// (planner.Planner.BindInsert, PlanDML, PlanRewrite, ExactFilter, Plan,
// QueryColumns, ParseColumns) and, for now, still holds the write core
// (running fragments on the workers, commits: planner.Planner.WriteSelect,
// RunWrite, CommitAppend, CommitFiles, CommitReplace) and runs CALL
// procedures and ALTER TABLE … EXECUTE (planner.Planner.AlterMaintenance),
// until they move here too (issue 13).
package statement
