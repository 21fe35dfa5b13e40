package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// ErrStatement: text that is not exactly one statement of the kind asked
// for. duckdb-go runs every statement of a text it is given (all but the
// last while preparing), so this is checked before anything else.
var ErrStatement = errors.New("engine: not one statement of the expected kind")

// AnyStatement asks Prepared for one statement of any kind.
const AnyStatement = duckdb.STATEMENT_TYPE_INVALID

// Prepared has DuckDB's parser check that query is exactly one statement,
// of the given kind unless kind is AnyStatement, prepares it on c and calls
// fn with it; the statement is closed when fn returns. For kind other than
// AnyStatement the text must also parse with DuckDB's parser proper:
// when that fails, a DuckDB connection tries other parsers on the pieces,
// and those need not read the text the way the lexer (and internal/sqltok)
// does.
func (c *Conn) Prepared(ctx context.Context, kind duckdb.StmtType, query string, fn func(*duckdb.Stmt) error) error {
	if err := c.checkText(ctx, kind, query); err != nil {
		return err
	}
	return c.c.Raw(func(dc any) error {
		conn, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("engine: unexpected driver connection %T", dc)
		}
		// Prepare (without a context) refuses more than one statement.
		ds, err := conn.Prepare(query)
		if err != nil {
			return withoutHints(err)
		}
		st, ok := ds.(*duckdb.Stmt)
		if !ok {
			ds.Close()
			return fmt.Errorf("engine: unexpected driver statement %T", ds)
		}
		defer st.Close()
		if kind != AnyStatement {
			got, err := st.StatementType()
			if err != nil {
				return err
			}
			if err := checkKind(kind, got); err != nil {
				return err
			}
		}
		return withoutHints(fn(st))
	})
}

// checkText is what Prepared checks before preparing: exactly one
// statement, which DuckDB's parser proper accepts unless kind is
// AnyStatement.
func (c *Conn) checkText(ctx context.Context, kind duckdb.StmtType, query string) error {
	if err := oneStatement(query); err != nil {
		return err
	}
	if kind != AnyStatement {
		return c.parses(ctx, query)
	}
	return nil
}

// checkKind refuses a prepared statement of another kind than asked for.
func checkKind(kind, got duckdb.StmtType) error {
	if kind != AnyStatement && got != kind {
		return fmt.Errorf("%w: a %s statement where %s was expected", ErrStatement, stmtName(got), stmtName(kind))
	}
	return nil
}

// parses checks that DuckDB's parser proper accepts query: json_serialize_sql
// answers with an AST, or with "only SELECT statements can be serialized",
// but not with a parser error, which it returns as ParseError.
func (c *Conn) parses(ctx context.Context, query string) error {
	var out string
	if err := c.c.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&out); err != nil {
		return fmt.Errorf("engine: parse: %w", err)
	}
	var doc struct {
		Error     bool   `json:"error"`
		ErrorType string `json:"error_type"`
		Message   string `json:"error_message"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return fmt.Errorf("engine: parse: %w", err)
	}
	if doc.Error && doc.ErrorType == "parser" {
		return &ParseError{Msg: doc.Message}
	}
	return nil
}

// ParseError is DuckDB's parser refusing a text.
type ParseError struct{ Msg string }

func (e *ParseError) Error() string { return "Parser Error: " + e.Msg }

func stmtName(t duckdb.StmtType) string {
	switch t {
	case duckdb.STATEMENT_TYPE_SELECT:
		return "SELECT"
	case duckdb.STATEMENT_TYPE_INSERT:
		return "INSERT"
	case duckdb.STATEMENT_TYPE_UPDATE:
		return "UPDATE"
	case duckdb.STATEMENT_TYPE_DELETE:
		return "DELETE"
	case duckdb.STATEMENT_TYPE_CREATE:
		return "CREATE"
	case duckdb.STATEMENT_TYPE_DROP:
		return "DROP"
	case duckdb.STATEMENT_TYPE_ALTER:
		return "ALTER"
	case duckdb.STATEMENT_TYPE_COPY:
		return "COPY"
	case duckdb.STATEMENT_TYPE_ATTACH:
		return "ATTACH"
	case duckdb.STATEMENT_TYPE_CREATE_FUNC:
		return "CREATE FUNCTION"
	case duckdb.STATEMENT_TYPE_SET, duckdb.STATEMENT_TYPE_VARIABLE_SET:
		return "SET"
	case duckdb.STATEMENT_TYPE_PRAGMA:
		return "PRAGMA"
	}
	return fmt.Sprintf("kind-%d", int(t))
}

// The statement counter parses with a database of its own that never runs
// anything: duckdb_extract_statements is parse-only, and duckdb-go does not
// expose it for a connection.
var parser struct {
	once sync.Once
	mu   sync.Mutex
	db   mapping.Database
	conn mapping.Connection
	err  error
}

// Statements returns how many statements DuckDB's parser finds in query, or
// the parser's error.
func Statements(query string) (int, error) {
	parser.once.Do(func() {
		if mapping.Open("", &parser.db) == mapping.StateError {
			parser.err = errors.New("engine: open the parser's database")
			return
		}
		if mapping.Connect(parser.db, &parser.conn) == mapping.StateError {
			parser.err = errors.New("engine: connect to the parser's database")
			return
		}
		// It never runs a statement, but is locked down like the others.
		for _, q := range []string{"SET autoinstall_known_extensions = false", "SET autoload_known_extensions = false",
			"SET enable_external_access = false", "SET lock_configuration = true"} {
			var res mapping.Result
			state := mapping.Query(parser.conn, q, &res)
			msg := mapping.ResultError(&res)
			mapping.DestroyResult(&res)
			if state == mapping.StateError {
				parser.err = fmt.Errorf("engine: lock down the parser's database: %s", msg)
				return
			}
		}
	})
	if parser.err != nil {
		return 0, parser.err
	}
	parser.mu.Lock()
	defer parser.mu.Unlock()
	var st mapping.ExtractedStatements
	n := mapping.ExtractStatements(parser.conn, query, &st)
	defer mapping.DestroyExtracted(&st)
	if n == 0 {
		if msg := mapping.ExtractStatementsError(st); msg != "" {
			// DuckDB's message, with its kind: "Parser Error: …", or
			// e.g. "Catalog Error: …" from transforming what it parsed.
			return 0, errors.New(msg)
		}
	}
	return int(n), nil
}

// oneStatement refuses text that is not exactly one statement.
func oneStatement(query string) error {
	n, err := Statements(query)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: the text holds %d statements", ErrStatement, n)
	}
	return nil
}
