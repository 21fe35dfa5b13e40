package parse

import (
	"strconv"
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// cursor reads a statement's tokens: the parsers of the kinds move it
// along the grammar.
type cursor struct {
	st   *Statement
	toks []sqltok.Token
	pos  int
}

// at reports whether the next tokens are the keywords kws.
func (c *cursor) at(kws ...string) bool {
	if c.pos+len(kws) > len(c.toks) {
		return false
	}
	for j, kw := range kws {
		if !c.toks[c.pos+j].Is(kw) {
			return false
		}
	}
	return true
}

// accept consumes the keywords kws if they come next.
func (c *cursor) accept(kws ...string) bool {
	if !c.at(kws...) {
		return false
	}
	c.pos += len(kws)
	return true
}

// atPunct reports whether the next token is the operator or
// punctuation s.
func (c *cursor) atPunct(s string) bool { return c.pos < len(c.toks) && c.toks[c.pos].IsOp(s) }

// acceptPunct consumes the operator or punctuation s if it comes next.
func (c *cursor) acceptPunct(s string) bool {
	if !c.atPunct(s) {
		return false
	}
	c.pos++
	return true
}

// atQuery reports whether a query starts here.
func (c *cursor) atQuery() bool {
	return c.at("SELECT") || c.at("WITH") || c.at("FROM") || c.at("TABLE") || c.atPunct("(")
}

// done reports whether every token is read.
func (c *cursor) done() bool { return c.pos >= len(c.toks) }

// last is the index of the statement's last token.
func (c *cursor) last() int { return len(c.toks) - 1 }

// peek is the next token; the caller checks done first.
func (c *cursor) peek() sqltok.Token { return c.toks[c.pos] }

// unexpected is the ErrSyntax error for the next token, or for the end
// of the statement when every token is read.
func (c *cursor) unexpected() error {
	if c.done() {
		return syntaxf("unexpected end of statement")
	}
	t := c.toks[c.pos]
	return syntaxf("unexpected %s at offset %d", strconv.Quote(t.Value), t.Pos)
}

// end reports an ErrSyntax error unless every token is read.
func (c *cursor) end() error {
	if !c.done() {
		return c.unexpected()
	}
	return nil
}

// ident reads a bare or quoted identifier.
func (c *cursor) ident() (string, error) {
	if c.done() || !c.toks[c.pos].IsIdent() {
		return "", c.unexpected()
	}
	c.pos++
	return c.toks[c.pos-1].Value, nil
}

// name reads a dotted name of at most max parts.
func (c *cursor) name(max int) ([]string, error) {
	var parts []string
	for {
		part, err := c.ident()
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
		if !c.atPunct(".") {
			break
		}
		if len(parts) == max {
			return nil, syntaxf("name %s… has more than %d parts", strings.Join(parts, "."), max)
		}
		c.pos++
	}
	return parts, nil
}

// columnNames reads "a, b, "c"" to the end (the inside of an INSERT
// column list).
func (c *cursor) columnNames() ([]string, error) {
	var out []string
	for {
		col, err := c.ident()
		if err != nil {
			return nil, err
		}
		out = append(out, col)
		if c.done() {
			return out, nil
		}
		if !c.acceptPunct(",") {
			return nil, c.unexpected()
		}
	}
}

// group finds the parenthesised group starting at the next token and
// returns the indexes of its "(" and ")"; it moves past the ")".
func (c *cursor) group() (open, closing int, err error) {
	if !c.atPunct("(") {
		return 0, 0, c.unexpected()
	}
	depth := 0
	for j := c.pos; j < len(c.toks); j++ {
		switch {
		case c.toks[j].IsOp("("):
			depth++
		case c.toks[j].IsOp(")"):
			depth--
			if depth == 0 {
				open, c.pos = c.pos, j+1
				return open, j, nil
			}
		}
	}
	return 0, 0, syntaxf("unbalanced parentheses")
}

// text is the statement's text from token from through token to.
func (c *cursor) text(from, to int) string { return c.st.src[c.toks[from].Pos:c.toks[to].End] }

// rest is the text from the next token to the end, and moves to the end.
func (c *cursor) rest() string {
	s := c.text(c.pos, c.last())
	c.pos = len(c.toks)
	return s
}

// within is a cursor over the tokens from through to only.
func (c *cursor) within(from, to int) *cursor {
	return &cursor{st: c.st, toks: c.toks[from : to+1]}
}

// opens and closes tell the brackets an expression nests: (…), […],
// {…} and CASE … END.
func opens(t sqltok.Token) bool {
	return t.IsOp("(") || t.IsOp("[") || t.IsOp("{") || t.Is("CASE")
}

func closes(t sqltok.Token) bool {
	return t.IsOp(")") || t.IsOp("]") || t.IsOp("}") || t.Is("END")
}

// exprUntil returns the text from here up to (not including) the first
// token outside brackets and CASE … END that is one of stops (keywords
// or punctuation), or the end, or a bracket closing one opened before
// it; empty text is an error.
func (c *cursor) exprUntil(stops ...string) (string, error) {
	from, depth := c.pos, 0
scan:
	for ; c.pos < len(c.toks); c.pos++ {
		t := c.toks[c.pos]
		if depth == 0 {
			for _, s := range stops {
				if t.Is(s) || t.IsOp(s) {
					break scan
				}
			}
		}
		switch {
		case opens(t):
			depth++
		case closes(t):
			depth--
		}
		if depth < 0 {
			break
		}
	}
	if c.pos == from {
		return "", c.unexpected()
	}
	return c.text(from, c.pos-1), nil
}

// where reads an optional trailing "WHERE pred" of stmt and returns
// pred's text ("" without one).
func (c *cursor) where(stmt string) (string, error) {
	if c.done() {
		return "", nil
	}
	if c.at("USING") || c.at("RETURNING") {
		return "", unsupportedf("%s … %s", stmt, strings.ToUpper(c.peek().Value))
	}
	if !c.accept("WHERE") || c.done() {
		return "", c.unexpected()
	}
	depth := 0
	for j := c.pos; j < len(c.toks); j++ {
		t := c.toks[j]
		switch {
		case opens(t):
			depth++
		case closes(t):
			depth--
		case depth == 0 && t.Is("RETURNING"):
			return "", unsupportedf("%s … RETURNING", stmt)
		}
	}
	return c.rest(), nil
}

// balanced reports whether the tokens from the next one on never close
// a parenthesis they did not open and close every one they open.
func (c *cursor) balanced() bool { return sqltok.Balanced(c.toks[c.pos:]) }
