package planner

import (
	"fmt"
	"strings"
	"unicode"
)

// Classify tells queries from updates by the statement's first keyword, and
// refuses statements clients may not run. DuckDB parses the statement later;
// this only routes it.
func (p *Planner) Classify(query string) (Kind, error) {
	kw := firstKeyword(query)
	switch kw {
	case "":
		return 0, fmt.Errorf("%w: empty statement", ErrSyntax)
	case "SELECT", "WITH", "VALUES", "FROM", "TABLE", "(", "EXPLAIN":
		return KindQuery, nil
	case "CREATE", "DROP", "INSERT", "UPDATE", "DELETE", "ALTER":
		return KindUpdate, nil
	case "COPY", "ATTACH", "DETACH", "INSTALL", "LOAD", "SET", "RESET", "PRAGMA",
		"EXPORT", "IMPORT", "CALL", "CHECKPOINT", "FORCE", "VACUUM", "USE", "EXECUTE", "PREPARE", "DEALLOCATE":
		return 0, fmt.Errorf("%w: %s statements are not allowed", ErrRefused, kw)
	case "MERGE", "TRUNCATE", "BEGIN", "COMMIT", "ROLLBACK",
		"START", "ABORT", "END", "SHOW", "DESCRIBE", "SUMMARIZE", "ANALYZE", "COMMENT", "UNPIVOT", "PIVOT":
		return 0, fmt.Errorf("%w: %s statements", ErrUnsupported, kw)
	default:
		return 0, fmt.Errorf("%w: unknown statement starting with %q", ErrSyntax, kw)
	}
}

// firstKeyword returns the upper-cased first word of query after white
// space and comments, or "(" for a parenthesised query.
func firstKeyword(q string) string {
	for {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		case strings.HasPrefix(q, "("):
			return "("
		default:
			end := strings.IndexFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
			if end < 0 {
				end = len(q)
			}
			return strings.ToUpper(q[:end])
		}
	}
}
