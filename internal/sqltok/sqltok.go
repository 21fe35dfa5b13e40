package sqltok

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Kind is the kind of a token.
type Kind uint8

// Token kinds.
const (
	// Word is a keyword or an unquoted identifier, as written.
	Word Kind = iota + 1
	// QuotedIdent is a "quoted identifier" (or U&"…"); Value is the name.
	QuotedIdent
	// String is a string constant: '…', E'…', U&'…' or $tag$…$tag$
	// (N'…' is the word N and a string); Value is its text.
	String
	// BitString is B'…' or X'…'; Value is the text between the quotes.
	BitString
	// Number is an integer or decimal constant.
	Number
	// Param is a parameter: $1, ?1 or ?.
	Param
	// Op is an operator or punctuation: "(", ";", "::", "<=", "->>", …, and
	// any other single byte DuckDB's lexer passes on as a token.
	Op
)

var kindNames = [...]string{Word: "word", QuotedIdent: "quoted identifier", String: "string",
	BitString: "bit string", Number: "number", Param: "parameter", Op: "operator"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Token is one token of a statement.
type Token struct {
	Kind Kind
	// Pos and End are the token's byte range in the text given to
	// Tokenize; Text is that range.
	Pos, End int
	Text     string
	// Value is the token's meaning: a string constant's or quoted
	// identifier's text without quotes and escapes; the text otherwise.
	Value string
}

// Is reports whether t is the word kw, in any case.
func (t Token) Is(kw string) bool { return t.Kind == Word && strings.EqualFold(t.Value, kw) }

// IsOp reports whether t is the operator or punctuation op.
func (t Token) IsOp(op string) bool { return t.Kind == Op && t.Value == op }

// IsIdent reports whether t names something: a word or a quoted identifier.
func (t Token) IsIdent() bool { return t.Kind == Word || t.Kind == QuotedIdent }

// ErrSyntax is what Tokenize's errors wrap: text DuckDB's lexer refuses.
var ErrSyntax = errors.New("sqltok: syntax error")

// Error is a lexical error at a byte offset.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Pos) }

// Unwrap makes errors.Is(err, ErrSyntax) hold.
func (e *Error) Unwrap() error { return ErrSyntax }

// Tokenize returns the tokens of src, without comments and white space. On
// text DuckDB's lexer refuses (an unterminated string, identifier or
// comment, an empty quoted identifier, a bad escape) and on a NUL byte
// (DuckDB's parser stops reading there, so the text after it would mean
// something to icefloe and nothing to DuckDB) it returns the tokens before
// the error and an *Error.
func Tokenize(src string) ([]Token, error) {
	Runs.Add(1)
	return tokenize(src)
}

// Runs counts the calls of Tokenize since the process started: the
// front end tokenizes a statement once (internal/parse), and tests hold
// it to that by the difference of two loads.
var Runs atomic.Int64

func tokenize(src string) ([]Token, error) {
	if i := strings.IndexByte(src, 0); i >= 0 {
		toks, err := tokenize(src[:i])
		if err == nil {
			err = &Error{Pos: i, Msg: "NUL byte in statement"}
		}
		return toks, err
	}
	text, spaces := stripUnicodeSpaces(src)
	lx := lexer{s: text}
	toks, err := lx.run()
	if spaces != nil {
		for i := range toks {
			toks[i].Pos = origOffset(toks[i].Pos, spaces)
			toks[i].End = origOffset(toks[i].End, spaces)
		}
		if e, ok := err.(*Error); ok {
			e.Pos = origOffset(e.Pos, spaces)
		}
	}
	for i := range toks {
		t := &toks[i]
		t.Text = src[t.Pos:t.End]
		if t.Kind != String && t.Kind != QuotedIdent && t.Kind != BitString {
			t.Value = t.Text
		}
	}
	return toks, err
}

// lexer scans the text after the Unicode-space pass.
type lexer struct {
	s    string
	i    int
	toks []Token
}

func (lx *lexer) errorf(pos int, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) emit(k Kind, pos int, value string) {
	lx.toks = append(lx.toks, Token{Kind: k, Pos: pos, End: lx.i, Value: value})
}

func (lx *lexer) run() ([]Token, error) {
	for lx.i < len(lx.s) {
		if err := lx.next(); err != nil {
			return lx.toks, err
		}
	}
	return lx.toks, nil
}

// at reports whether the text at offset i starts with p.
func (lx *lexer) at(i int, p string) bool { return strings.HasPrefix(lx.s[i:], p) }

func (lx *lexer) byteAt(i int) byte {
	if i < len(lx.s) {
		return lx.s[i]
	}
	return 0
}

// next scans one token (or comment, or white space) at lx.i.
func (lx *lexer) next() error {
	s, start := lx.s, lx.i
	c := s[start]
	switch {
	case isSpace(c):
		lx.i++
		return nil
	case lx.at(start, "--"):
		lx.i = lineEnd(s, start)
		return nil
	case lx.at(start, "/*"):
		return lx.blockComment()
	case c == '"':
		return lx.quotedIdent(start, start+1, false)
	case c == '$':
		return lx.dollar()
	}
	if ok, err := lx.quotedLiteral(c, start); ok {
		return err
	}
	lx.plain(c, start)
	return nil
}

// quotedLiteral scans a string literal ('…', E'…', B'…', X'…', U&'…') or a
// Unicode identifier (U&"…") at start, whose first byte is c; false when
// there is none there.
func (lx *lexer) quotedLiteral(c byte, start int) (bool, error) {
	switch {
	case c == '\'':
		return true, lx.quoted(start, start+1, 'q')
	case (c == 'e' || c == 'E') && lx.byteAt(start+1) == '\'':
		return true, lx.quoted(start, start+2, 'e')
	case (c == 'b' || c == 'B' || c == 'x' || c == 'X') && lx.byteAt(start+1) == '\'':
		return true, lx.quoted(start, start+2, 'b')
	case (c == 'u' || c == 'U') && lx.at(start+1, "&'"):
		return true, lx.quoted(start, start+3, 'u')
	case (c == 'u' || c == 'U') && lx.at(start+1, "&\""):
		return true, lx.quotedIdent(start, start+3, true)
	}
	return false, nil
}

// plain scans a word, number, parameter or operator at start, whose first
// byte is c; every other byte is a token of its own: "(", ",", ";", "#",
// "\v", …
func (lx *lexer) plain(c byte, start int) {
	s := lx.s
	switch {
	case isIdentStart(c):
		lx.i = start + 1
		for lx.i < len(s) && isIdentCont(s[lx.i]) {
			lx.i++
		}
		lx.emit(Word, start, "")
	case isDigit(c) || c == '.' && isDigit(lx.byteAt(start+1)):
		lx.number()
	case c == '?':
		lx.i = start + 1
		lx.i = scanInteger(s, lx.i)
		lx.emit(Param, start, "")
	case c == ':':
		lx.i = start + 1
		if b := lx.byteAt(lx.i); b == ':' || b == '=' {
			lx.i++
		}
		lx.emit(Op, start, "")
	case c == '.':
		lx.i = start + 1
		if lx.byteAt(lx.i) == '.' {
			lx.i++
		}
		lx.emit(Op, start, "")
	case isOpChar(c):
		lx.i = start + operatorLen(s[start:])
		lx.emit(Op, start, "")
	default:
		lx.i = start + 1
		lx.emit(Op, start, "")
	}
}

// isSpace is DuckDB's lexer's white space: not \v, not Unicode spaces.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isNewline(c byte) bool { return c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentStart and isIdentCont: ASCII letters, '_', every byte >= 0x80,
// and (after the first byte) digits and '$'.
func isIdentStart(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

// isOpChar: the bytes multi-byte operators are made of.
func isOpChar(c byte) bool { return strings.IndexByte("~!@^&|`+-*/%<>=", c) >= 0 }

// lineEnd is the offset of the \n or \r that ends the -- comment at i, or
// the end of s.
func lineEnd(s string, i int) int {
	for i < len(s) && !isNewline(s[i]) {
		i++
	}
	return i
}

// blockComment skips a /* */ comment, which nests.
func (lx *lexer) blockComment() error {
	start, s := lx.i, lx.s
	depth := 0
	i := start
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				lx.i = i
				return nil
			}
		default:
			i++
		}
	}
	return lx.errorf(start, "unterminated /* comment")
}

// operatorLen is the length of the operator at the start of s: the run of
// operator bytes, cut before a "--" or "/*" inside it, without trailing '+'
// and '-' unless the run has one of ~!@^&|`?% before them (so "=-" is two
// tokens and "@-" one).
func operatorLen(s string) int {
	n := 0
	for n < len(s) && isOpChar(s[n]) {
		n++
	}
	run := s[:n]
	if i := strings.Index(run, "/*"); i >= 0 {
		n = i
	}
	if i := strings.Index(run[:n], "--"); i >= 0 {
		n = i
	}
	for n > 1 && (s[n-1] == '+' || s[n-1] == '-') {
		if strings.ContainsAny(s[:n-1], "~!@^&|`?%") {
			break
		}
		n--
	}
	return n
}

// scanInteger returns the end of the digits at i, where single '_'
// may separate digits ("1_000"); i itself if there is no digit.
func scanInteger(s string, i int) int {
	if i >= len(s) || !isDigit(s[i]) {
		return i
	}
	i++
	for i < len(s) {
		switch {
		case isDigit(s[i]):
			i++
		case s[i] == '_' && i+1 < len(s) && isDigit(s[i+1]):
			i += 2
		default:
			return i
		}
	}
	return i
}

// number scans an integer, decimal or real constant: "1", "1.", ".5",
// "1.5e-3", "1_000"; "1..2" is 1, "..", 2 and "1e" is 1 then e.
func (lx *lexer) number() {
	s, start := lx.s, lx.i
	i := scanInteger(s, start)
	if i < len(s) && s[i] == '.' {
		if i+1 < len(s) && s[i+1] == '.' && i > start {
			lx.i = i
			lx.emit(Number, start, "")
			return
		}
		i = scanInteger(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if k := scanInteger(s, j); k > j {
			i = k
		}
	}
	lx.i = i
	lx.emit(Number, start, "")
}

// dollar scans what starts with '$': a parameter $1, a dollar-quoted
// string $tag$…$tag$, or a lone '$'.
func (lx *lexer) dollar() error {
	s, start := lx.s, lx.i
	if j := scanInteger(s, start+1); j > start+1 {
		lx.i = j
		lx.emit(Param, start, "")
		return nil
	}
	j := start + 1
	if j < len(s) && isIdentStart(s[j]) {
		for j < len(s) && isIdentStart(s[j]) || j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j >= len(s) || s[j] != '$' {
		// "$abc" without a closing '$' is the byte '$' and a word.
		lx.i = start + 1
		lx.emit(Op, start, "")
		return nil
	}
	delim := s[start : j+1]
	body := j + 1
	end := strings.Index(s[body:], delim)
	if end < 0 {
		return lx.errorf(start, "unterminated dollar-quoted string")
	}
	lx.i = body + end + len(delim)
	lx.emit(String, start, s[body:body+end])
	return nil
}

// quotedIdent scans "…" (or U&"…") whose text starts at body.
func (lx *lexer) quotedIdent(start, body int, unicode bool) error {
	s := lx.s
	var b strings.Builder
	i := body
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return lx.errorf(start, "unterminated quoted identifier")
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == '"' {
			b.WriteByte('"')
			i++
			continue
		}
		break
	}
	if b.Len() == 0 {
		return lx.errorf(start, "zero-length delimited identifier")
	}
	lx.i = i
	value := b.String()
	if unicode {
		var err error
		if value, err = lx.uescape(start, value); err != nil {
			return err
		}
	}
	lx.emit(QuotedIdent, start, value)
	return nil
}

// quoted scans a quoted string whose text starts at body. mode is 'q' for
// '…', 'e' for E'…' (backslash escapes), 'b' for B'…'/X'…' (no escapes, not
// even a doubled quote), 'u' for U&'…'.
func (lx *lexer) quoted(start, body int, mode byte) error {
	s := lx.s
	var b strings.Builder
	i := body
	for {
		if i >= len(s) {
			if mode == 'b' {
				return lx.errorf(start, "unterminated bit string literal")
			}
			return lx.errorf(start, "unterminated quoted string")
		}
		c := s[i]
		switch {
		case c == '\'' && mode != 'b' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == '\'':
			// The end, unless white space with a newline and another
			// quote follow: then the string goes on.
			if next, ok := quoteContinue(s, i+1); ok {
				i = next
				continue
			}
			lx.i = i + 1
			return lx.endQuoted(start, mode, b.String())
		case c == '\\' && mode == 'e':
			n, err := lx.escape(&b, i)
			if err != nil {
				return err
			}
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
}

func (lx *lexer) endQuoted(start int, mode byte, value string) error {
	switch mode {
	case 'b':
		lx.emit(BitString, start, value)
		return nil
	case 'u':
		v, err := lx.uescape(start, value)
		if err != nil {
			return err
		}
		lx.emit(String, start, v)
		return nil
	}
	lx.emit(String, start, value)
	return nil
}

// quoteContinue reports whether white space holding a newline and then a
// quote start at i (SQL's continuation of a string literal: 'a'\n'b' is
// 'ab'), and returns the offset after that quote. Only spaces, tabs, form
// feeds and -- comments may come before the newline; after it, any white
// space and comments that end in a newline.
func quoteContinue(s string, i int) (int, bool) {
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\f':
			i++
			continue
		case strings.HasPrefix(s[i:], "--"):
			i = lineEnd(s, i)
			continue
		}
		break
	}
	if i >= len(s) || !isNewline(s[i]) {
		return 0, false
	}
	i++
	for i < len(s) {
		switch {
		case isSpace(s[i]):
			i++
			continue
		case strings.HasPrefix(s[i:], "--"):
			if e := lineEnd(s, i); e < len(s) {
				i = e + 1
				continue
			}
		}
		break
	}
	if i < len(s) && s[i] == '\'' {
		return i + 1, true
	}
	return 0, false
}

// escape decodes the backslash escape at s[i] of an E'…' string into b and
// returns the bytes it takes.
func (lx *lexer) escape(b *strings.Builder, i int) (int, error) {
	s := lx.s
	if i+1 >= len(s) {
		b.WriteByte('\\')
		return 1, nil
	}
	c := s[i+1]
	switch {
	case c >= '0' && c <= '7':
		j := i + 1
		for j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7' {
			j++
		}
		v, _ := strconv.ParseUint(s[i+1:j], 8, 16)
		b.WriteByte(byte(v))
		return j - i, nil
	case c == 'x' && i+2 < len(s) && isHex(s[i+2]):
		j := i + 2
		for j < len(s) && j < i+4 && isHex(s[j]) {
			j++
		}
		v, _ := strconv.ParseUint(s[i+2:j], 16, 8)
		b.WriteByte(byte(v))
		return j - i, nil
	case c == 'u' || c == 'U':
		// DuckDB's lexer does not implement Unicode escapes.
		return 0, lx.errorf(i, "unsupported Unicode escape in string")
	}
	switch c {
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	}
	b.WriteByte(c)
	return 2, nil
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// uescape finishes a U&'…' string or U&"…" identifier: an optional
// UESCAPE 'c' may follow, and escapes are refused as DuckDB refuses them.
func (lx *lexer) uescape(start int, value string) (string, error) {
	s := lx.s
	esc := byte('\\')
	j := skipWhite(s, lx.i)
	if j+7 <= len(s) && strings.EqualFold(s[j:j+7], "uescape") {
		k := skipWhite(s, j+7)
		if k+3 <= len(s) && s[k] == '\'' && s[k+1] != '\'' && s[k+2] == '\'' {
			esc = s[k+1]
			lx.i = k + 3
		}
	}
	if strings.IndexByte(value, esc) >= 0 {
		return "", lx.errorf(start, "unsupported Unicode escape in string")
	}
	return value, nil
}

// skipWhite skips white space and -- comments from i.
func skipWhite(s string, i int) int {
	for i < len(s) {
		switch {
		case isSpace(s[i]):
			i++
		case strings.HasPrefix(s[i:], "--"):
			i = lineEnd(s, i)
		default:
			return i
		}
	}
	return i
}
