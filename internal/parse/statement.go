package parse

import (
	"fmt"
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Statement is one statement, tokenized and parsed once.
type Statement struct {
	// Text is the statement's text: what the client sent, or for a
	// statement inside another (the query of CREATE TABLE … AS, the
	// statement of EXPLAIN) its part of the outer text.
	Text string
	// Kind is the statement's kind; Info says what the kind table says of
	// it. Invalid when the statement does not parse.
	Kind Kind
	// Body is the kind's typed statement: a *Query for SELECT and
	// SUMMARIZE, a *CreateTable for CREATE TABLE, …; nil when the
	// statement does not parse.
	Body Body

	// src is the text the tokens' offsets index (the outer text for a
	// statement inside another); all are every token of it, toks the
	// statement's own without leading and trailing semicolons.
	src    string
	off    int // where Text starts in src
	all    []sqltok.Token
	toks   []sqltok.Token
	lexErr bool
	// quoted are the names the statement writes only in double quotes.
	quoted map[string]bool
}

// Body is the typed statement of one kind.
type Body interface{ body() }

// Parse tokenizes text once and parses it into a Statement. The returned
// Statement is never nil: when err is not nil its Kind is Invalid, and
// it still serves Keyword and Redacted for the audit of the failure.
// Errors wrap ErrSyntax, ErrInvalid, ErrUnsupported or ErrRefused.
func Parse(text string) (*Statement, error) {
	toks, err := sqltok.Tokenize(text)
	st := &Statement{Text: text, src: text, all: toks}
	if err != nil {
		st.lexErr = true
		return st, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	st.toks = trimSemicolons(toks)
	st.quoted = quotedNames(st.toks)
	if err := st.parse(); err != nil {
		st.Kind, st.Body = KindInvalid, nil
		return st, err
	}
	return st, nil
}

// Must is Parse for statements known to parse (tests, constants): it
// panics on an error.
func Must(text string) *Statement {
	st, err := Parse(text)
	if err != nil {
		panic(fmt.Sprintf("parse.Must(%q): %v", text, err))
	}
	return st
}

// Built is a query icefloe wrote itself (from parsed values, names
// quoted, nothing for the Iceberg rewrites to change): it is not
// tokenized. quoted are the names to resolve as written only, as the
// statement the query was built for quoted them (nil for none).
func Built(sql string, quoted map[string]bool) *Statement {
	return &Statement{Text: sql, src: sql, Kind: KindSelect, Body: &Query{Duck: sql}, quoted: quoted}
}

// Info is the kind table's entry of the statement's kind.
func (s *Statement) Info() *Info { return s.Kind.Info() }

// Query is the body of a query (SELECT, SUMMARIZE, a query inside
// another statement), nil for any other statement.
func (s *Statement) Query() *Query {
	q, _ := s.Body.(*Query)
	return q
}

// Quoted reports whether the statement writes name only in double
// quotes: such a name matches only as written. (A name the statement
// also writes bare is not quoted.)
func (s *Statement) Quoted(name string) bool { return s.quoted[name] }

// QuotedNames are the names the statement writes only in double quotes;
// the caller must not change the map.
func (s *Statement) QuotedNames() map[string]bool { return s.quoted }

// HasParams reports whether the statement has a placeholder (?, ?1, $1).
func (s *Statement) HasParams() bool {
	for _, t := range s.toks {
		if t.Kind == sqltok.Param {
			return true
		}
	}
	return false
}

// Keyword is the statement's first keyword, upper-cased (SELECT, CREATE,
// …), "(" for a parenthesised query, "" for none: the audit line's
// statement field.
func (s *Statement) Keyword() string {
	for _, t := range s.all {
		switch {
		case t.IsOp(";"):
			continue
		case t.Kind == sqltok.Word:
			return strings.ToUpper(t.Value)
		case t.IsOp("("):
			return "("
		}
		return ""
	}
	return ""
}

// Redacted is the statement's text with every literal (strings, also
// E'…' and $tag$…$tag$, bit strings and numbers) replaced by ? and its
// comments dropped; "" when the text does not tokenize, so that
// redaction never fails open.
func (s *Statement) Redacted() string {
	if s.lexErr {
		return ""
	}
	return redact(s.all)
}

// Redact is Statement.Redacted for any text (a plan's fragment SQL).
func Redact(text string) string {
	toks, err := sqltok.Tokenize(text)
	if err != nil {
		return ""
	}
	return redact(toks)
}

func redact(toks []sqltok.Token) string {
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

// CheapTextBytes bounds the text of a cheap statement.
const CheapTextBytes = 4 << 10

// Cheap says whether the statement is a short SELECT or VALUES that
// names no table (no FROM, TABLE or INTO anywhere): the cheap lane of
// admission, which answers it without a slot.
func (s *Statement) Cheap() bool {
	if s.Kind != KindSelect || len(s.Text) > CheapTextBytes || len(s.toks) == 0 ||
		!(s.toks[0].Is("SELECT") || s.toks[0].Is("VALUES")) {
		return false
	}
	for _, t := range s.toks {
		if t.Is("FROM") || t.Is("TABLE") || t.Is("INTO") || t.IsOp(";") {
			return false
		}
	}
	return true
}

// trimSemicolons drops leading and trailing ';' tokens.
func trimSemicolons(toks []sqltok.Token) []sqltok.Token {
	for len(toks) > 0 && toks[0].IsOp(";") {
		toks = toks[1:]
	}
	return sqltok.Trim(toks)
}

// quotedNames are the identifiers toks write only in double quotes.
func quotedNames(toks []sqltok.Token) map[string]bool {
	var quoted, plain map[string]bool
	for _, t := range toks {
		switch t.Kind {
		case sqltok.QuotedIdent:
			if quoted == nil {
				quoted = map[string]bool{}
			}
			quoted[t.Value] = true
		case sqltok.Word:
			if plain == nil {
				plain = map[string]bool{}
			}
			plain[t.Value] = true
		}
	}
	for v := range plain {
		delete(quoted, v)
	}
	return quoted
}

// parse finds the statement's kind in the table and runs its parser.
func (s *Statement) parse() error {
	if len(s.toks) == 0 {
		return syntaxf("empty statement")
	}
	e, n := lookup(s.toks)
	if e == nil {
		return syntaxf("unknown statement starting with %q", firstWord(s.toks))
	}
	if e.refuse != nil {
		return e.refuse(s.toks, n)
	}
	s.Kind = e.Kind
	if !e.Query {
		for _, t := range s.toks {
			if t.IsOp(";") {
				return syntaxf("one statement at a time")
			}
		}
	}
	c := &cursor{st: s, toks: s.toks, pos: n}
	b, err := e.parse(c)
	if err != nil {
		return err
	}
	s.Body = b
	return nil
}

// firstWord is what Classify named an unknown statement by: its first
// token, upper-cased.
func firstWord(toks []sqltok.Token) string {
	t := toks[0]
	if t.Kind == sqltok.Word {
		return strings.ToUpper(t.Value)
	}
	if t.IsOp("(") {
		return "("
	}
	return ""
}

// sub is the statement made of this statement's tokens from through to
// (indexes into its tokens), sharing its text.
func (s *Statement) sub(from, to int) *Statement {
	toks := s.toks[from : to+1]
	return &Statement{Text: s.src[toks[0].Pos:toks[len(toks)-1].End], src: s.src, off: toks[0].Pos, all: toks, toks: toks,
		quoted: quotedNames(toks)}
}

// subQuery is the query made of the tokens from through to: DuckDB
// parses it, as the text of a query.
func (s *Statement) subQuery(from, to int) *Statement {
	q := s.sub(from, to)
	q.Kind, q.Body = KindSelect, newQuery(q)
	return q
}

// subStatement parses the tokens from through to as a statement of its
// own (what EXPLAIN explains).
func (s *Statement) subStatement(from, to int) (*Statement, error) {
	q := s.sub(from, to)
	if err := q.parse(); err != nil {
		return nil, err
	}
	return q, nil
}
