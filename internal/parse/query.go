package parse

import (
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// Query is the body of a statement DuckDB parses whole: SELECT, WITH,
// VALUES, FROM, TABLE, a parenthesised query, SUMMARIZE, and the query
// inside CREATE TABLE … AS, INSERT … SELECT, CREATE VIEW … AS and
// DESCRIBE.
type Query struct {
	// Duck is the text DuckDB's parser gets: the statement with the
	// time-travel clauses DuckDB lacks rewritten into its AT clause and
	// a reserved word used as a qualifier quoted (rewrite).
	Duck string
}

func (*Query) body() {}

func parseQuery(c *cursor) (Body, error) { return newQuery(c.st), nil }

func newQuery(st *Statement) *Query { return &Query{Duck: rewrite(st.src, st.off, st.toks, st.Text)} }

// rewrite returns text (src[off:off+len(text)], whose tokens toks are,
// their offsets into src)
// with two rewrites DuckDB's parser needs, from the same tokens:
//
//   - a reserved word used as a qualifier — `default` right before a
//     "." — is quoted, so `FROM default.orders` parses as DuckDB parses
//     `FROM "default".orders` (catalogs name schemas so: Iceberg's
//     "default"). Nowhere else can such a word stand before a dot.
//   - Spark's and Trino's time travel, [FOR] VERSION AS OF v, [FOR]
//     SYSTEM_VERSION AS OF v, [FOR] TIMESTAMP AS OF t and [FOR]
//     SYSTEM_TIME AS OF t, becomes AT (VERSION => v) / AT (TIMESTAMP =>
//     t), moved after a table alias that follows (DuckDB wants the alias
//     first). v and t are one literal as written (a string, a number, or
//     TIMESTAMP '…'); anything else is left for DuckDB to refuse.
//
// Text without either is returned as it is; what comes out is parsed by
// DuckDB as any statement is.
func rewrite(src string, off int, toks []sqltok.Token, text string) string {
	if len(toks) == 0 {
		return text
	}
	quote := qualifierTokens(toks)
	var out strings.Builder
	last := off // offset into src up to which text is written
	changed := false
	// copyTo writes src from last to end, quoting the qualifiers in it.
	copyTo := func(end int) {
		for i, q := range quote {
			t := toks[i]
			if !q || t.Pos < last || t.End > end {
				continue
			}
			out.WriteString(src[last:t.Pos])
			out.WriteString(`"` + t.Value + `"`)
			last, changed = t.End, true
		}
		out.WriteString(src[last:end])
		last = end
	}
	for i := 0; i < len(toks); i++ {
		j := i
		if toks[j].Is("FOR") {
			j++
		}
		if j+2 >= len(toks) || !toks[j+1].Is("AS") || !toks[j+2].Is("OF") {
			continue
		}
		unit := ""
		switch {
		case toks[j].Is("VERSION"), toks[j].Is("SYSTEM_VERSION"):
			unit = "VERSION"
		case toks[j].Is("TIMESTAMP"), toks[j].Is("SYSTEM_TIME"):
			unit = "TIMESTAMP"
		default:
			continue
		}
		v := j + 3
		end, ok := temporalValue(toks, v)
		if !ok {
			continue
		}
		at := "AT (" + unit + " => " + src[toks[v].Pos:toks[end].End] + ")"
		aliasEnd := temporalAlias(toks, quote, end+1)
		copyTo(toks[i].Pos)
		if aliasEnd > end {
			last = toks[end+1].Pos
			copyTo(toks[aliasEnd].End)
			out.WriteString(" ")
		}
		out.WriteString(at)
		i = max(end, aliasEnd)
		last, changed = toks[i].End, true
	}
	if !changed && !anyTrue(quote) {
		return text
	}
	copyTo(toks[len(toks)-1].End)
	return out.String() + src[last:off+len(text)]
}

func anyTrue(b []bool) bool {
	for _, v := range b {
		if v {
			return true
		}
	}
	return false
}

// qualifierWords are reserved words DuckDB's parser refuses as the first
// part of a dotted name, though catalogs name schemas so (Iceberg's
// "default").
var qualifierWords = map[string]bool{"default": true}

// qualifierTokens marks the tokens that are a reserved word right before
// an adjacent ".".
func qualifierTokens(toks []sqltok.Token) []bool {
	var out []bool
	for i, t := range toks {
		if t.Kind != sqltok.Word || !qualifierWords[strings.ToLower(t.Value)] || i+1 >= len(toks) ||
			!toks[i+1].IsOp(".") || toks[i+1].Pos != t.End {
			continue
		}
		if out == nil {
			out = make([]bool, len(toks))
		}
		out[i] = true
	}
	return out
}

// temporalValue returns the last token of the literal starting at i.
func temporalValue(toks []sqltok.Token, i int) (int, bool) {
	switch {
	case i >= len(toks):
		return 0, false
	case toks[i].Kind == sqltok.String, toks[i].Kind == sqltok.Number:
		return i, true
	case (toks[i].Is("TIMESTAMP") || toks[i].Is("TIMESTAMPTZ") || toks[i].Is("DATE")) && i+1 < len(toks) && toks[i+1].Kind == sqltok.String:
		return i + 1, true
	}
	return 0, false
}

// notAlias are the words that may follow a table reference without being
// its alias.
var notAlias = map[string]bool{
	"WHERE": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "FULL": true, "CROSS": true,
	"NATURAL": true, "POSITIONAL": true, "ASOF": true, "ANTI": true, "SEMI": true, "ON": true, "USING": true,
	"GROUP": true, "ORDER": true, "HAVING": true, "WINDOW": true, "QUALIFY": true, "LIMIT": true,
	"OFFSET": true, "FETCH": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "LATERAL": true,
	"TABLESAMPLE": true, "USING_SAMPLE": true, "RETURNING": true, "SET": true, "AND": true, "OR": true,
}

// temporalAlias returns the last token of a table alias starting at i
// ("AS name", or a name that is not a keyword), or i-1 when none. A
// quoted qualifier (quote) counts as a quoted identifier.
func temporalAlias(toks []sqltok.Token, quote []bool, i int) int {
	ident := func(k int) bool { return toks[k].IsIdent() }
	quoted := func(k int) bool { return toks[k].Kind == sqltok.QuotedIdent || quote != nil && quote[k] }
	if i < len(toks) && toks[i].Is("AS") && i+1 < len(toks) && ident(i+1) {
		return i + 1
	}
	if i < len(toks) && (quoted(i) || toks[i].Kind == sqltok.Word && !notAlias[strings.ToUpper(toks[i].Value)]) {
		return i
	}
	return i - 1
}
