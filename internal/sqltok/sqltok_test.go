package sqltok

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// show prints tokens compactly: kind:text, and =value where it differs.
func show(toks []Token) string {
	var parts []string
	for _, t := range toks {
		s := fmt.Sprintf("%s:%q", t.Kind, t.Text)
		if t.Value != t.Text {
			s += fmt.Sprintf("=%q", t.Value)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		src, want string
	}{
		{"SELECT 1", `word:"SELECT" number:"1"`},
		// -- ends at \n and at \r; the rest of the line is code.
		{"a -- c\rb", `word:"a" word:"b"`},
		{"a -- c\nb", `word:"a" word:"b"`},
		{"a -- c\r\nb", `word:"a" word:"b"`},
		{"a -- c", `word:"a"`},
		// Block comments nest.
		{"a /* x /* y */ z */ b", `word:"a" word:"b"`},
		{"a /*/ x */ b", `word:"a" word:"b"`},
		{"a **/", `word:"a" operator:"**/"`},
		// Strings: doubled quotes, continuation over a newline, not over a
		// blank or a block comment.
		{"'it''s'", `string:"'it''s'"="it's"`},
		{"'a'\n'b'", `string:"'a'\n'b'"="ab"`},
		{"'a' -- c\n  'b'", `string:"'a' -- c\n  'b'"="ab"`},
		{"'a' 'b'", `string:"'a'"="a" string:"'b'"="b"`},
		{"'a' /* c */\n'b'", `string:"'a'"="a" string:"'b'"="b"`},
		{"'a;b' ; c", `string:"'a;b'"="a;b" operator:";" word:"c"`},
		// E'…' escapes; a backslash does nothing in '…'.
		{`E'a\'b\n\x41\101\\'`, `string:"E'a\\'b\\n\\x41\\101\\\\'"="a'b\nAA\\"`},
		{`'a\' b`, `string:"'a\\'"="a\\" word:"b"`},
		{"e'x'", `string:"e'x'"="x"`},
		{"ee'x'", `word:"ee" string:"'x'"="x"`},
		{"N'x'", `word:"N" string:"'x'"="x"`},
		{"B'01''1'", `bit string:"B'01'"="01" string:"'1'"="1"`},
		{"X'ab'", `bit string:"X'ab'"="ab"`},
		// Dollar quotes; $1 is a parameter, a$b a word.
		{"$$a'b$$", `string:"$$a'b$$"="a'b"`},
		{"$t$ $$ $u$ $t$", `string:"$t$ $$ $u$ $t$"=" $$ $u$ "`},
		{"$1 $2_0 ? ?3", `parameter:"$1" parameter:"$2_0" parameter:"?" parameter:"?3"`},
		{"a$b$c", `word:"a$b$c"`},
		{"$a b", `operator:"$" word:"a" word:"b"`},
		// Quoted identifiers.
		{`"a""b"."c"`, `quoted identifier:"\"a\"\"b\""="a\"b" operator:"." quoted identifier:"\"c\""="c"`},
		{`U&"x"`, `quoted identifier:"U&\"x\""="x"`},
		{`U&'x' UESCAPE '!'`, `string:"U&'x' UESCAPE '!'"="x"`},
		// Numbers.
		{"1 1.5 .5 1. 1e3 1.5E-2 1_000 1..3 1e", `number:"1" number:"1.5" number:".5" number:"1." number:"1e3" number:"1.5E-2" number:"1_000" number:"1" operator:".." number:"3" number:"1" word:"e"`},
		// Operators: cut before comments, trailing + and - split off.
		{"a=-1", `word:"a" operator:"=" operator:"-" number:"1"`},
		{"a@-1", `word:"a" operator:"@-" number:"1"`},
		{"a+--c\nb", `word:"a" operator:"+" word:"b"`},
		{"a*/*c*/b", `word:"a" operator:"*" word:"b"`},
		{"x::int <= y <> z ->> 'k' :=", `word:"x" operator:"::" word:"int" operator:"<=" word:"y" operator:"<>" word:"z" operator:"->>" string:"'k'"="k" operator:":="`},
		// Only ASCII space, \t, \n, \r, \f separate; \v is a token.
		{"a\fb\vc", `word:"a" word:"b" operator:"\v" word:"c"`},
		// Unicode spaces outside quotes are blanks, inside they are text;
		// other non-ASCII bytes are identifier bytes.
		{"a\u00a0b 'x\u00a0y' é", `word:"a" word:"b" string:"'x\u00a0y'"="x\u00a0y" word:"é"`},
		{"a\u3000b\u2028c", `word:"a" word:"b\u2028c"`},
	}
	for _, c := range cases {
		toks, err := Tokenize(c.src)
		if err != nil {
			t.Errorf("Tokenize(%q): %v", c.src, err)
			continue
		}
		if got := show(toks); got != c.want {
			t.Errorf("Tokenize(%q)\n got %s\nwant %s", c.src, got, c.want)
		}
	}
}

func TestTokenizeErrors(t *testing.T) {
	cases := []struct {
		src string
		pos int
	}{
		{"SELECT 'abc", 7},
		{"SELECT E'abc\\'", 7},
		{`SELECT "abc`, 7},
		{`SELECT ""`, 7},
		{"SELECT /* a /* b */", 7},
		{"SELECT $t$ x $u$", 7},
		{"SELECT B'01", 7},
		{`SELECT E'\u0041'`, 9},
	}
	for _, c := range cases {
		toks, err := Tokenize(c.src)
		var le *Error
		if !errors.As(err, &le) || !errors.Is(err, ErrSyntax) {
			t.Errorf("Tokenize(%q): err %v, want a lexical error", c.src, err)
			continue
		}
		if le.Pos != c.pos {
			t.Errorf("Tokenize(%q): error at %d, want %d (%v)", c.src, le.Pos, c.pos, err)
		}
		if len(toks) != 1 || !toks[0].Is("select") {
			t.Errorf("Tokenize(%q): tokens before the error %s, want SELECT", c.src, show(toks))
		}
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{"SELECT 1; SELECT 2", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT 1 -- c\r; SELECT 2", []string{"SELECT 1 -- c", "SELECT 2"}},
		{"SELECT 1 -- c; SELECT 2", []string{"SELECT 1 -- c; SELECT 2"}},
		{"SELECT ';' ; /* ; */ SELECT \"a;b\"; $$;$$", []string{"SELECT ';'", `/* ; */ SELECT "a;b"`, "$$;$$"}},
		{"  ;; -- only comments\n ; /* x */ ", nil},
		{"SELECT 1;\v", []string{"SELECT 1", "\v"}},
		{"SELECT 1; SELECT 'abc", []string{"SELECT 1", "SELECT 'abc"}},
		{"SELECT 1; /* open", []string{"SELECT 1", "/* open"}},
	}
	for _, c := range cases {
		if got := Split(c.src); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

func TestFirstWord(t *testing.T) {
	cases := map[string]string{
		"  select 1":                     "SELECT",
		"-- x\r\nINSERT INTO t":          "INSERT",
		"-- SELECT\rCOPY t TO 'f'":       "COPY",
		"/* SELECT /* nested */ */ DROP": "DROP",
		"(SELECT 1)":                     "(",
		"; WITH x AS (SELECT 1)":         "WITH",
		"'a'":                            "",
		"/* open":                        "",
		"":                               "",
	}
	for src, want := range cases {
		if got := FirstWord(src); got != want {
			t.Errorf("FirstWord(%q) = %q, want %q", src, got, want)
		}
	}
}
