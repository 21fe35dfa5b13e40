package audit

import "github.com/icefloe/icefloe/internal/parse"

// Redact replaces every literal of a piece of SQL — strings (also E'…',
// $tag$…$tag$), bit strings and numbers — with ?, and drops its comments,
// using the module's one SQL tokenizer (the one that agrees with DuckDB).
// Text that does not tokenize gives "": redaction never fails open. A
// client's statement is redacted from its tokens
// (parse.Statement.Redacted), without tokenizing it again.
func Redact(sql string) string { return parse.Redact(sql) }
