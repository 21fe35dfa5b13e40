package sqltok

// DuckDB's parser first turns some Unicode space characters into a blank
// (Parser::StripUnicodeSpaces) and lexes the result. That pass has a
// scanner of its own, simpler than the lexer: it skips '…' and "…" (with a
// doubled quote as an escape), $tag$…$tag$ and -- comments, but not /* */
// comments or E'…' escapes, and it never looks at the last two bytes. The
// functions below do exactly the same, so that the lexer sees the same
// text DuckDB's does.

// unicodeSpace is one replaced run: at pos in the original text, n bytes.
type unicodeSpace struct{ pos, n int }

// stripUnicodeSpaces returns src with DuckDB's Unicode spaces replaced by a
// blank, and where they were; nil when there were none.
func stripUnicodeSpaces(src string) (string, []unicodeSpace) {
	spaces := findUnicodeSpaces(src)
	if len(spaces) == 0 {
		return src, nil
	}
	b := make([]byte, 0, len(src))
	prev := 0
	for _, sp := range spaces {
		b = append(b, src[prev:sp.pos]...)
		b = append(b, ' ')
		prev = sp.pos + sp.n
	}
	b = append(b, src[prev:]...)
	return string(b), spaces
}

// findUnicodeSpaces is DuckDB's scan for U+00A0, U+2000–U+200B, U+202F,
// U+205F, U+2060, U+3000 and U+FEFF outside its idea of quotes and
// comments.
func findUnicodeSpaces(q string) []unicodeSpace {
	var out []unicodeSpace
	n := len(q)
	pos := 0
	for pos+2 < n {
		c := q[pos]
		if w := unicodeSpaceAt(q, pos); w > 0 {
			out = append(out, unicodeSpace{pos, w})
			pos++
			continue
		}
		switch {
		case c == '"' || c == '\'':
			end, ok := skipQuoted(q, pos)
			if !ok {
				return out
			}
			pos = end
		case c == '$' && (q[pos+1] == '$' || dollarTagStart(q[pos+1])):
			next, ok := skipDollarQuoted(q, pos)
			if !ok {
				return out
			}
			pos = next
			continue
		case c == '-' && q[pos+1] == '-':
			for ; pos < n && q[pos] != '\n' && q[pos] != '\r'; pos++ {
			}
			if pos >= n {
				return out
			}
		}
		pos++
	}
	return out
}

// unicodeSpaceAt is the length of the Unicode space DuckDB's pass replaces
// at q[pos:] (pos+2 < len(q)), or 0.
func unicodeSpaceAt(q string, pos int) int {
	switch q[pos] {
	case 0xC2:
		if q[pos+1] == 0xA0 {
			return 2
		}
	case 0xE2:
		switch q[pos+1] {
		case 0x80:
			if d := q[pos+2]; d >= 0x80 && d <= 0x8B || d == 0xAF {
				return 3
			}
		case 0x81:
			if d := q[pos+2]; d == 0x9F || d == 0xA0 {
				return 3
			}
		}
	case 0xE3:
		if q[pos+1] == 0x80 && q[pos+2] == 0x80 {
			return 3
		}
	case 0xEF:
		if q[pos+1] == 0xBB && q[pos+2] == 0xBF {
			return 3
		}
	}
	return 0
}

// skipQuoted skips a quoted string or identifier whose quote is at
// q[pos], up to the last byte but one: it returns the position of the
// closing quote, and false when none comes before that.
func skipQuoted(q string, pos int) (int, bool) {
	n := len(q)
	c := q[pos]
	pos++
	for ; pos+1 < n; pos++ {
		if q[pos] == c {
			if q[pos+1] == c {
				pos++
				continue
			}
			break
		}
	}
	return pos, pos+1 < n
}

// skipDollarQuoted skips a dollar quote whose first '$' is at q[pos]: it
// returns where the scan goes on (the closing delimiter's last '$', or,
// when what follows is not a tag after all, the byte that ended it), and
// false when the scan ends (the quote does not close before the last two
// bytes).
func skipDollarQuoted(q string, pos int) (int, bool) {
	n := len(q)
	pos++
	start := pos
	tag := ""
	for ; pos+2 < n; pos++ {
		if q[pos] == '$' {
			tag = q[start:pos]
			break
		}
		if !dollarTagStart(q[pos]) && !(q[pos] >= '0' && q[pos] <= '9') {
			break
		}
	}
	if pos+2 >= n {
		return pos, false
	}
	if q[pos] != '$' {
		// Not a tag after all: scan on from this byte.
		return pos, true
	}
	// In the dollar quote (starting at the tag's closing '$'), up to the
	// last two bytes.
	for ; pos+2 < n; pos++ {
		if q[pos] == '$' && n-(pos+1) >= len(tag)+1 && q[pos+len(tag)+1] == '$' && q[pos+1:pos+1+len(tag)] == tag {
			return pos + len(tag) + 1, true
		}
	}
	return pos, false
}

// dollarTagStart is the pass's first byte of a dollar-quote tag (it does
// not allow '_', unlike the lexer).
func dollarTagStart(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= 0x80 }

// origOffset maps an offset in the stripped text back to src.
func origOffset(off int, spaces []unicodeSpace) int {
	shift := 0
	for _, sp := range spaces {
		if sp.pos-shift >= off {
			break
		}
		shift += sp.n - 1
	}
	return off + shift
}
