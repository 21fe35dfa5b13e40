package suggest

import (
	"strings"
	"unicode/utf8"
)

// Nearest returns the candidate closest to name by edit distance (case
// ignored), or "" when none is close enough to be a likely misspelling:
// at most a third of the longer name's letters may differ. Between
// candidates as near, the one nearer as written (case counted) wins, then
// the earlier one.
func Nearest(name string, candidates []string) string {
	best, bestDist, bestExact := "", -1, 0
	lname := strings.ToLower(name)
	for _, c := range candidates {
		d := distance(lname, strings.ToLower(c))
		limit := max(utf8.RuneCountInString(name), utf8.RuneCountInString(c)) / 3
		if d > max(limit, 1) {
			continue
		}
		exact := distance(name, c)
		if bestDist < 0 || d < bestDist || d == bestDist && exact < bestExact {
			best, bestDist, bestExact = c, d, exact
		}
	}
	return best
}

// Hint is Nearest as the end of a message: ` (did you mean "x"?)`, or "".
func Hint(name string, candidates []string) string {
	if n := Nearest(name, candidates); n != "" {
		return ` (did you mean "` + n + `"?)`
	}
	return ""
}

// distance is the Damerau-Levenshtein (optimal string alignment) distance
// in runes: insertions, deletions, substitutions and swaps of neighbours
// each cost one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
