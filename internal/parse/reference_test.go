package parse

import (
	"strings"

	"github.com/icefloe/icefloe/internal/sqltok"
)

// The two passes the planner ran before the front end, each tokenizing
// the text again: quoteQualifiers, then temporalClauses over its result.
// rewrite must give exactly what they gave (TestRewriteMatchesTwoPasses,
// FuzzRewrite).

func refQuoteQualifiers(query string) string {
	toks, err := sqltok.Tokenize(query)
	if err != nil {
		return query
	}
	var b strings.Builder
	last := 0
	for i, t := range toks {
		if t.Kind != sqltok.Word || !qualifierWords[strings.ToLower(t.Value)] || i+1 >= len(toks) ||
			!toks[i+1].IsOp(".") || toks[i+1].Pos != t.End {
			continue
		}
		b.WriteString(query[last:t.Pos])
		b.WriteString(`"` + strings.ReplaceAll(t.Value, `"`, `""`) + `"`)
		last = t.End
	}
	if last == 0 {
		return query
	}
	b.WriteString(query[last:])
	return b.String()
}

func refTemporalClauses(query string) string {
	toks, err := sqltok.Tokenize(query)
	if err != nil {
		return query
	}
	var out strings.Builder
	last := 0
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
		at := "AT (" + unit + " => " + query[toks[v].Pos:toks[end].End] + ")"
		aliasEnd := temporalAlias(toks, nil, end+1)
		out.WriteString(query[last:toks[i].Pos])
		if aliasEnd > end {
			out.WriteString(query[toks[end+1].Pos:toks[aliasEnd].End])
			out.WriteString(" ")
		}
		out.WriteString(at)
		last = toks[max(end, aliasEnd)].End
		i = max(end, aliasEnd)
	}
	if last == 0 {
		return query
	}
	out.WriteString(query[last:])
	return out.String()
}

// refRewrite is what the planner gave DuckDB's parser.
func refRewrite(query string) string { return refTemporalClauses(refQuoteQualifiers(query)) }

// refQuotedIdents is the planner's quotedIdents.
func refQuotedIdents(query string) map[string]bool {
	toks, err := sqltok.Tokenize(query)
	if err != nil {
		return nil
	}
	quoted, plain := map[string]bool{}, map[string]bool{}
	for _, t := range toks {
		switch t.Kind {
		case sqltok.QuotedIdent:
			quoted[t.Value] = true
		case sqltok.Word:
			plain[t.Value] = true
		}
	}
	for v := range plain {
		delete(quoted, v)
	}
	return quoted
}
