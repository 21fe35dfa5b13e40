// Package planner turns SQL into a distributed plan: it parses with DuckDB's
// parser, resolves and pins every table through catalog, binds the result
// schema in DuckDB against empty stand-ins, prunes with Iceberg expressions,
// plans and groups file tasks, chooses a strategy and seals one ticket per
// endpoint.
//
// Statement execution is moving out to package statement (issue 13), whose
// Executor wraps a Planner and is what runs every update statement;
// statement imports planner, never the reverse. What statement uses from
// here is the statement parser (Parser, ParseUpdate, PartitionItem,
// SortItem), write targets (WriteTarget, LoadTarget, LoadTargetRef,
// LoadMadeTarget), DuckDB's reading of a column list and of a query's
// columns (Planner.ParseColumns, Planner.QueryColumns), the binding of an
// INSERT's query to its target (Planner.BindInsert), an UPDATE, DELETE or
// MERGE read and printed against its target (Planner.PlanDML), the
// endpoints of its copy-on-write rewrite (Planner.PlanRewrite) and the
// exact filter of a merge-on-read delete (Planner.ExactFilter), the checks and
// stand-ins of INSERT … VALUES (CheckValues, CreateStandIn, ValuesSelect,
// DriverArgs), a new table's partition spec and sort order (PartitionSpec,
// SortOrderOf, CheckDecimalPartitions, CheckPlacement), authorization
// (Planner.Authorize), the schema of a new table or view
// (Planner.ExistingSchema), a catalog's views (Planner.Views; queries
// expand them here), the sealed tickets of an ingest's write fragments
// (Planner.WriteTickets), a metadata commit (Planner.CommitMeta), the
// dry-run notes of an EXPLAIN of a write (DryRun) and the plan of EXPLAIN
// lines (LinesPlan).
//
// Until the rest moves, the write core stays here, exported for
// statement: running a statement's write fragments and its commits
// (Planner.WriteSelect, RunWrite, NewWrite, RemoveFiles, RemoveOnly,
// CommitAppend, CommitFiles, CommitReplace, CommitOnce, KeepOrRemove,
// Commit, WriteResults), and so do CALL procedures and ALTER TABLE …
// EXECUTE (Planner.AlterMaintenance).
package planner
