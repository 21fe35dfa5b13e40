package sqltok

import "strings"

// Split cuts a script into its statements at ';' tokens, as DuckDB's parser
// does, and returns each statement's text between its semicolons with the
// white space (DuckDB's) around it trimmed (comments stay; a piece with no token, only
// white space and comments, is dropped). If the script has a lexical
// error, the text from the start of the statement holding it to the end of
// the script is the last statement, so that the server reports the error
// in its own words.
func Split(src string) []string {
	stmts := SplitLines(src)
	if len(stmts) == 0 {
		return nil
	}
	out := make([]string, len(stmts))
	for i, st := range stmts {
		out[i] = st.Text
	}
	return out
}

// Statement is one statement of a script: its text as Split returns it
// and the line (from 1) its text starts on.
type Statement struct {
	Text string
	Line int
}

// SplitLines is Split with the line each statement starts on.
func SplitLines(src string) []Statement {
	toks, err := Tokenize(src)
	var out []Statement
	add := func(piece string, at int) {
		lead := len(piece) - len(strings.TrimLeft(piece, space))
		line := 1 + strings.Count(src[:at+lead], "\n")
		if text := strings.Trim(piece, space); text != "" {
			out = append(out, Statement{Text: text, Line: line})
		}
	}
	start, code := 0, false // where the current piece starts; has it a token
	for _, t := range toks {
		if t.IsOp(";") {
			if code {
				add(src[start:t.Pos], start)
			}
			start, code = t.End, false
			continue
		}
		code = true
	}
	if code || err != nil {
		add(src[start:], start)
	}
	return out
}

// space is DuckDB's white space (isSpace).
const space = " \t\n\r\f"

// Trim drops trailing ';' tokens from toks.
func Trim(toks []Token) []Token {
	for len(toks) > 0 && toks[len(toks)-1].IsOp(";") {
		toks = toks[:len(toks)-1]
	}
	return toks
}

// FirstWord returns the upper-cased first token of src when it is a word,
// "(" when it is an opening parenthesis, and "" otherwise (no token, or a
// lexical error before the first token).
func FirstWord(src string) string {
	toks, _ := Tokenize(src)
	for _, t := range toks {
		switch {
		case t.IsOp(";"):
			continue
		case t.Kind == Word:
			return strings.ToUpper(t.Value)
		case t.IsOp("("):
			return "("
		}
		return ""
	}
	return ""
}

// Balanced reports whether toks never close a parenthesis they did not
// open and close every one they open, so that text made of them can be
// put between "(" and ")" and stay one group.
func Balanced(toks []Token) bool {
	depth := 0
	for _, t := range toks {
		switch {
		case t.IsOp("("):
			depth++
		case t.IsOp(")"):
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
