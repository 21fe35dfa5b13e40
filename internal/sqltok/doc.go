// Package sqltok is the one SQL tokenizer of the module. It cuts text into
// tokens exactly where DuckDB's parser does: DuckDB's lexer is PostgreSQL's
// (libpg_query's scan.l), run after a pass that turns some Unicode spaces
// into blanks, and this package follows both rule by rule: comments (`--`
// to the next \n or \r, nested /* */), quoted text ('…' with a doubled quote and the
// newline continuation, E'…' with backslash escapes, B'…', X'…', U&'…',
// dollar-quoted $tag$…$tag$, "…" identifiers), numbers, parameters and
// operators, and only ASCII space, tab, \n, \r and \f as white space.
//
// The planner uses it to route statements and to cut out the clauses
// Iceberg adds to DuckDB's grammar; `icefloe sql` uses it to split scripts
// into statements. It decides nothing about what a statement means: that
// is DuckDB's parser's job, and every statement icefloe runs is checked by
// it. The tests compare this package with DuckDB's own parser on a corpus
// and under `go test -fuzz`.
package sqltok
