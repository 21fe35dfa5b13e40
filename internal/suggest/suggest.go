package suggest

import "strings"

// Nearest returns the candidate closest to name by edit distance, ignoring
// case, or "" when none is close enough to be a plausible typo: at most a
// third of name's length away (and at least one edit is always allowed).
// Between equally near names, the one nearer in case wins, then the
// earlier one.
func Nearest(name string, candidates []string) string {
	want := []rune(strings.ToLower(name))
	limit := max(1, len(want)/3)
	best, bestD, bestExact := "", limit+1, 0
	for _, c := range candidates {
		d := distance(want, []rune(strings.ToLower(c)))
		// Between names as near ignoring case, the one nearer as
		// written wins.
		exact := distance([]rune(name), []rune(c))
		if d < bestD || d == bestD && exact < bestExact {
			best, bestD, bestExact = c, d, exact
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
