package sqltok

import "strings"

// Split cuts a script into its statements at ';' tokens, as DuckDB's parser
// does, and returns each statement's text from its first token to its last
// (so comments and white space around it are dropped, and statements of
// only comments vanish). If the script has a lexical error, the text from
// the start of the statement holding it to the end of the script is the
// last statement, so that the server reports the error in its own words.
func Split(src string) []string {
	toks, err := Tokenize(src)
	var out []string
	first := -1 // index of the current statement's first token
	for i, t := range toks {
		switch {
		case t.IsOp(";"):
			if first >= 0 {
				out = append(out, src[toks[first].Pos:toks[i-1].End])
			}
			first = -1
		case first < 0:
			first = i
		}
	}
	switch {
	case err != nil:
		from := len(src)
		if first >= 0 {
			from = toks[first].Pos
		} else if e, ok := err.(*Error); ok {
			from = e.Pos
		}
		out = append(out, strings.TrimSpace(src[from:]))
	case first >= 0:
		out = append(out, src[toks[first].Pos:toks[len(toks)-1].End])
	}
	return out
}

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
