package sqltok

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/icefloe/icefloe/internal/engine"
)

// These tests hold the tokenizer against DuckDB's own parser: the number of
// statements duckdb_extract_statements finds, and, for SELECTs, the AST of
// json_serialize_sql, whose nodes carry the byte offset of the token they
// come from (query_location) and the decoded values of constants and
// identifiers.

// duck is a DuckDB used only to parse: an engine connection for
// json_serialize_sql, and engine.Statements for the statement count.
type duck struct {
	mu   sync.Mutex
	eng  *engine.Engine
	conn *engine.Conn
}

// TestMain closes the engine (and removes its spill folder) at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if duckInst != nil {
		duckInst.conn.Close()
		duckInst.eng.Close()
	}
	os.Exit(code)
}

var (
	duckOnce sync.Once
	duckInst *duck
	duckErr  error
)

func openDuck(t testing.TB) *duck {
	duckOnce.Do(func() {
		ctx := context.Background()
		eng, err := engine.Open(ctx, engine.Options{Threads: 1, MemoryLimit: "256MB"})
		if err != nil {
			duckErr = err
			return
		}
		conn, err := eng.Conn(ctx)
		if err != nil {
			duckErr = err
			return
		}
		duckInst = &duck{eng: eng, conn: conn}
	})
	if duckErr != nil {
		t.Fatal(duckErr)
	}
	return duckInst
}

// statements is DuckDB's statement count of q, or its parser error.
func (d *duck) statements(q string) (int, error) { return engine.Statements(q) }

// serializeDoc is json_serialize_sql's answer.
type serializeDoc struct {
	Error      bool   `json:"error"`
	ErrorType  string `json:"error_type"`
	Statements []any  `json:"statements"`
}

func (d *duck) serializeDoc(q string) (serializeDoc, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var doc serializeDoc
	out, err := d.conn.SerializeSQL(context.Background(), q)
	if err != nil {
		return doc, false
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	return doc, dec.Decode(&doc) == nil
}

// parses reports whether DuckDB's parser proper (libpg_query, without the
// fallbacks a connection tries after it fails) accepts q: then
// json_serialize_sql answers with an AST or with "not a SELECT", not with a
// parser error.
func (d *duck) parses(q string) bool {
	doc, ok := d.serializeDoc(q)
	return ok && (!doc.Error || doc.ErrorType != "parser")
}

// astNode is one object of json_serialize_sql's output.
type astNode = map[string]any

// serialize returns the statements of a SELECT as DuckDB parsed them, or
// nil when DuckDB refuses the text or it is not a SELECT.
func (d *duck) serialize(q string) []any {
	doc, ok := d.serializeDoc(q)
	if !ok || doc.Error {
		return nil
	}
	return doc.Statements
}

// queryLocations are the nodes of an AST that name a token's offset.
func queryLocations(v any, fn func(n astNode, loc int)) {
	switch x := v.(type) {
	case astNode:
		if l, ok := x["query_location"].(json.Number); ok {
			if u, err := l.Float64(); err == nil && u < math.MaxInt32 {
				fn(x, int(u))
			}
		}
		for _, c := range x {
			queryLocations(c, fn)
		}
	case []any:
		for _, c := range x {
			queryLocations(c, fn)
		}
	}
}

// checkAgainstDuckDB compares Tokenize and Split of src with DuckDB's
// parser and reports every disagreement.
func checkAgainstDuckDB(t testing.TB, d *duck, src string) {
	t.Helper()
	toks, lexErr := Tokenize(src)
	for i, tk := range toks {
		if tk.Pos < 0 || tk.End > len(src) || tk.Pos >= tk.End || tk.Text != src[tk.Pos:tk.End] || i > 0 && tk.Pos < toks[i-1].End {
			t.Fatalf("%q: token %d %+v out of place", src, i, tk)
		}
	}
	if i := strings.IndexByte(src, 0); i >= 0 {
		// DuckDB reads up to the NUL byte; Tokenize refuses it there.
		var le *Error
		if !errors.As(lexErr, &le) || le.Pos > i {
			t.Errorf("%q: Tokenize gives %v, want an error at the NUL byte at %d", src, lexErr, i)
		}
		if le != nil && le.Pos == i {
			checkAgainstDuckDB(t, d, src[:i])
		}
		return
	}
	parses := d.parses(src)
	if lexErr != nil && parses {
		t.Errorf("%q: Tokenize refuses it (%v), DuckDB's parser accepts it", src, lexErr)
	}
	if parses && lexErr == nil {
		checkSplit(t, d, src)
	}
	stmts := d.serialize(src)
	if len(stmts) == 0 || lexErr != nil {
		return
	}
	switch w := FirstWord(src); w {
	case "", "INSERT", "CREATE", "DROP", "ALTER", "UPDATE", "DELETE", "COPY", "ATTACH", "SET", "PRAGMA", "LOAD", "INSTALL":
		t.Errorf("%q: DuckDB parses a SELECT, FirstWord says %q", src, w)
	}
	byPos := map[int]Token{}
	for _, tk := range toks {
		byPos[tk.Pos] = tk
	}
	stripped, spaces := stripUnicodeSpaces(src)
	queryLocations(stmts, func(node astNode, loc int) {
		// Constants, column and table references come from a token of
		// their own; other nodes may be made up (the * of FROM t).
		if loc >= len(stripped) || node["class"] != "CONSTANT" && node["class"] != "COLUMN_REF" && node["type"] != "BASE_TABLE" {
			return
		}
		pos := origOffset(loc, spaces)
		tk, ok := byPos[pos]
		if !ok {
			t.Errorf("%q: DuckDB has a %v node at offset %d (%q…), no token starts there: %s", src, node["type"], pos, clip(src[pos:]), show(toks))
			return
		}
		checkNode(t, src, node, tk)
	})
}

// checkSplit holds Split to DuckDB's count of src's statements, each piece
// one statement. ExtractStatements also transforms what it parsed; its
// errors there (e.g. mixing $1 and $name) say nothing about the count.
func checkSplit(t testing.TB, d *duck, src string) {
	t.Helper()
	n, err := d.statements(src)
	if err != nil {
		return
	}
	parts := Split(src)
	if len(parts) != n {
		t.Errorf("%q: Split finds %d statements %q, DuckDB %d (%v)", src, len(parts), parts, n, err)
	}
	for _, p := range parts {
		if m, err := d.statements(p); m != 1 && err == nil {
			t.Errorf("%q: piece %q is %d statements for DuckDB (%v)", src, p, m, err)
		}
	}
}

// checkNode compares a constant's or column reference's value with the
// token DuckDB read it from.
func checkNode(t testing.TB, src string, node astNode, tk Token) {
	t.Helper()
	switch node["class"] {
	case "CONSTANT":
		val, _ := node["value"].(astNode)
		typ, _ := val["type"].(astNode)
		if typ["id"] != "VARCHAR" || tk.Kind != String || val["is_null"] == true {
			return
		}
		if s, _ := val["value"].(string); s != tk.Value {
			t.Errorf("%q: DuckDB reads string %q at %d, Tokenize %q", src, s, tk.Pos, tk.Value)
		}
	case "COLUMN_REF":
		names, _ := node["column_names"].([]any)
		if len(names) == 0 {
			return
		}
		name, _ := names[0].(string)
		if !tk.IsIdent() || !strings.EqualFold(name, tk.Value) {
			t.Errorf("%q: DuckDB reads column %q at %d, Tokenize %s", src, name, tk.Pos, show([]Token{tk}))
		}
	}
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

// corpus holds comment, quote, dollar-string and line-ending forms, each
// in a statement DuckDB parses (and a few it refuses).
var corpus = []string{
	"SELECT 1",
	"SELECT 1 -- comment\r, 2",
	"SELECT 1 -- comment\n, 2",
	"SELECT 1 -- comment\r\n, 2",
	"SELECT 1 -- comment\r; SELECT 2",
	"SELECT 1; -- comment\r SELECT 2",
	"SELECT 1 /* a /* nested */ still */ + 2",
	"SELECT 1 /* ; */, 2 /* -- */, 3",
	"SELECT 1 /*/ x */",
	"SELECT 'it''s', 'a;b', 'a--b', 'a/*b'",
	"SELECT 'a'\n'b', 'c' -- x\n'd', 'e'\r\n\t'f'",
	"SELECT 'a'\r'b'",
	"SELECT E'a\\'b', E'\\n\\t\\x41\\101\\\\', e'x''y'",
	"SELECT E'\\'; SELECT 2 --'",
	"SELECT '\\'; SELECT 2 --'",
	"SELECT $$a'b;c$$, $t$ $$ $u$ $t$, $a$b$a$",
	"SELECT $1, $2 + 1",
	"SELECT \"a;b\", \"x\"\"y\" FROM (SELECT 1 AS \"a;b\", 2 AS \"x\"\"y\")",
	"SELECT x AS \"--\" FROM (SELECT 1 AS x)",
	"SELECT 1\f+\f2",
	"SELECT 1\v+2",
	"SELECT 1;\v",
	"SELECT\u00a01",
	"SELECT '\u00a0' AS a, \"\u00a0\" FROM (SELECT 1 AS \"\u00a0\")",
	"SELECT 1\u3000+\u20002",
	"SELECT 1 -- \u00a0\r+2",
	"SELECT é FROM (SELECT 1 AS é)",
	"SELECT 1.5, .5, 1., 1e3, 1.5e-2, 1_000, 3::VARCHAR",
	"SELECT [1,2][1:2], {'a': 1}, 2 ** 3, 7 // 2, 'a' || 'b'",
	"SELECT 1=-1, 2<=3, 4<>5, 6!=7, 1 >= 0",
	"SELECT 1--2\n",
	"SELECT 1+--2\n+3",
	"SELECT 2*/*c*/3",
	"SELECT x'ab', b'0101'",
	"SELECT U&'x'",
	"SELECT '",
	"SELECT /* open",
	"SELECT \"open",
	"SELECT $$open",
	"INSERT INTO t VALUES (1, 'a') -- x\r; CREATE MACRO m(a) AS a",
	"INSERT INTO t VALUES (1 -- x\r), (2)",
	"CREATE TABLE t (a INT -- x\r, b VARCHAR)",
	"CREATE TABLE t (a INT) -- x\r; COPY t TO 'f'",
	"UPDATE t SET a = 'x' -- \r WHERE b = 1",
	"DELETE FROM t WHERE a = $$x$$ /* ; */",
	"ALTER TABLE t ADD COLUMN c INT -- \r; ATTACH ':memory:' AS m",
	"WITH a AS (SELECT 1 AS x) SELECT x FROM a",
	"SELECT 1\x00; SELECT 2",
}

func TestAgainstDuckDB(t *testing.T) {
	d := openDuck(t)
	for _, src := range corpus {
		checkAgainstDuckDB(t, d, src)
	}
}

// FuzzTokenize holds Tokenize and Split against DuckDB's parser on
// arbitrary text, starting from the corpus.
func FuzzTokenize(f *testing.F) {
	for _, src := range corpus {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkAgainstDuckDB(t, openDuck(t), src)
	})
}
