package planner

import (
	"fmt"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Classify tells queries from updates by the statement's first keyword, and
// refuses statements clients may not run. DuckDB parses the statement later;
// this only routes it.
func (p *Planner) Classify(query string) (Kind, error) {
	if _, err := sqltok.Tokenize(query); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	kw := sqltok.FirstWord(query)
	switch kw {
	case "":
		return 0, fmt.Errorf("%w: empty statement", ErrSyntax)
	case "SELECT", "WITH", "VALUES", "FROM", "TABLE", "(", "EXPLAIN", "CALL", "SHOW", "DESCRIBE", "DESC", "SUMMARIZE":
		return KindQuery, nil
	case "CREATE", "DROP", "INSERT", "UPDATE", "DELETE", "ALTER", "USE", "MERGE", "TRUNCATE":
		return KindUpdate, nil
	case "COPY", "ATTACH", "DETACH", "INSTALL", "LOAD", "SET", "RESET", "PRAGMA",
		"EXPORT", "IMPORT", "CHECKPOINT", "FORCE", "VACUUM", "EXECUTE", "PREPARE", "DEALLOCATE":
		return 0, fmt.Errorf("%w: %s statements are not allowed", ErrRefused, kw)
	case "BEGIN", "COMMIT", "ROLLBACK",
		"START", "ABORT", "END", "ANALYZE", "COMMENT", "UNPIVOT", "PIVOT":
		return 0, fmt.Errorf("%w: %s statements", ErrUnsupported, kw)
	default:
		return 0, fmt.Errorf("%w: unknown statement starting with %q", ErrSyntax, kw)
	}
}
