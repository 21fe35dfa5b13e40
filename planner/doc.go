// Package planner turns a parsed statement (internal/parse) that returns
// rows into a distributed plan: it has DuckDB's parser build the tree of
// a query, resolves and pins every table through catalog, binds the
// result schema in DuckDB against empty stand-ins, prunes with Iceberg
// expressions, plans and groups file tasks, chooses a strategy and seals
// one ticket per endpoint. Bind and Plan run the runner the statement's
// kind registered (registerQuery).
//
// Statement execution lives in package statement, whose Executor wraps a
// Planner; statement imports planner, never the reverse. What statement
// uses from here is planning and shared reading: a partition item's and
// a sort order's Iceberg values (PartitionTransform, PartitionSpec,
// SortOrderOf, ParseSortOrder), write targets (WriteTarget, LoadTarget, LoadTargetRef),
// an INSERT's query bound to its target (BindInsert) and the write spec
// and the plans of writes (NewWrite, PlanWrite, PlanIngest), the plans of
// UPDATE, DELETE and MERGE (PlanDML, PlanRewrite, ExactFilter), the plan
// of a compaction (PlanCompaction, CompactSpec, DefaultCompactSpec),
// authorization (Planner.Authorize), DuckDB's reading of a column list
// and of a query's columns, the schema of a new table or view, a
// catalog's views, the dry-run notes of an EXPLAIN of a write (DryRun)
// and the plan of EXPLAIN lines (LinesPlan). CALL reaches the query path
// (Bind, Plan) and is answered by the Procedures statement installs
// (SetProcedures).
//
// planner does not run writes: it neither pulls write fragments from the
// workers nor commits. It imports internal/commit only for what queries
// and the API share with the commits: the error sentinels ErrConflict and
// ErrCommitUnknown, the commit counters (CommitStats, Planner.Commits,
// which statement's commits count into), DefaultCommitRetries, and
// commit.FindRef to resolve the branch a query or a write target reads.
package planner
