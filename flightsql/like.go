package flightsql

// likeMatch reports whether s matches the SQL LIKE pattern p, where '%'
// matches any run of characters, '_' any one character and '\' escapes the
// character after it (SQL_SEARCH_STRING_ESCAPE). Matching is by rune and
// case-sensitive. A trailing lone '\' matches a literal '\'.
func likeMatch(p, s string) bool {
	pat, str := []rune(p), []rune(s)
	// Iterative wildcard matching with backtracking to the last '%'.
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for si < len(str) {
		if pi < len(pat) {
			switch c := pat[pi]; {
			case c == '%':
				starPi, starSi = pi, si
				pi++
				continue
			case c == '_':
				pi++
				si++
				continue
			default:
				lit, n := literal(pat, pi)
				if lit == str[si] {
					pi += n
					si++
					continue
				}
			}
		}
		if starPi < 0 {
			return false
		}
		starSi++
		pi, si = starPi+1, starSi
	}
	for pi < len(pat) && pat[pi] == '%' {
		pi++
	}
	return pi == len(pat)
}

// literal returns the literal rune at pat[i] and how many pattern runes it
// takes, resolving a '\' escape.
func literal(pat []rune, i int) (rune, int) {
	if pat[i] == '\\' && i+1 < len(pat) {
		return pat[i+1], 2
	}
	return pat[i], 1
}

// matchPattern applies an optional LIKE filter: nil matches everything.
func matchPattern(p *string, s string) bool {
	return p == nil || likeMatch(*p, s)
}
