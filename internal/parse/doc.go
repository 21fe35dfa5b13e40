// Package parse is icefloe's front end: every statement a client sends
// is tokenized once (internal/sqltok) and parsed once into a *Statement,
// a typed value that everything after it reads — admission (the cheap
// lane), audit (its kind, its redacted text), the planner (EXPLAIN, CALL,
// SHOW, time travel, name resolution) and the statement executor (a typed
// AST per kind). Nothing downstream looks at the text again.
//
// The kinds of statement are one table (kinds.go): for each kind, the
// keywords that start it, whether it returns rows, its audit kind,
// whether it takes an admission slot and parameters, which runner runs
// it, whether EXPLAIN runs it as a dry run, and its parser. Keywords
// clients may not use are entries of the same table with the error they
// get. Each kind's parser lives in a file of its own here (schema.go,
// table.go, insert.go, …, as DuckDB keeps one transform per statement
// kind), and builds the kind's typed body: a CreateTable, an AlterTable
// with a typed action, a Merge, …. Queries (SELECT, WITH, VALUES, …) are
// DuckDB's to parse: their body, a Query, is only the text DuckDB's
// parser gets (Iceberg's time-travel spellings rewritten into DuckDB's
// AT clause, reserved qualifiers quoted) and the names the statement
// quotes, both computed from the same tokens; the planner asks DuckDB
// for the tree (json_serialize_sql) once per statement.
//
// Expressions inside other statements (an UPDATE's SET values, a
// WHERE clause, VALUES rows, column definitions) stay text cut at token
// boundaries: DuckDB parses them where they are used, and nothing here
// decides what they mean.
//
// The package imports only internal/sqltok and the standard library.
package parse
