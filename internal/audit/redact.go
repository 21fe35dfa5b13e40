package audit

import (
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Redact replaces every literal of a statement — strings (also E'…',
// $tag$…$tag$), bit strings and numbers — with ?, and drops its comments,
// using the module's one SQL tokenizer (the one that agrees with DuckDB).
// Text that does not tokenize gives "": redaction never fails open.
func Redact(sql string) string {
	toks, err := sqltok.Tokenize(sql)
	if err != nil {
		return ""
	}
	var b strings.Builder
	end := 0
	for _, t := range toks {
		if t.Pos > end && b.Len() > 0 {
			b.WriteByte(' ') // white space or a comment between tokens
		}
		switch t.Kind {
		case sqltok.String, sqltok.BitString, sqltok.Number:
			b.WriteByte('?')
		default:
			b.WriteString(t.Text)
		}
		end = t.End
	}
	return b.String()
}

// Statement is the statement's first keyword, upper-cased (SELECT,
// CREATE, …), as the audit line's statement field.
func Statement(sql string) string { return sqltok.FirstWord(sql) }
