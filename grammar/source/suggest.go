package source

import (
	"fmt"
	"sort"
	"strings"
)

// Suggest returns " (did you mean X?)" for the candidate closest to name
// (by edit distance, ignoring case) when it is close enough to help, else
// " (known: A, B, …)" when the candidates are few, else "". Diagnostics
// append it to "unknown X".
func Suggest(name string, cands []string) string {
	if best, ok := Closest(name, cands); ok {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(cands) > 0 && len(cands) <= 12 {
		sorted := append([]string(nil), cands...)
		sort.Strings(sorted)
		return " (known: " + strings.Join(sorted, ", ") + ")"
	}
	return ""
}

// Closest returns the candidate closest to name by edit distance,
// ignoring case, if it is close enough to suggest.
func Closest(name string, cands []string) (string, bool) {
	best, bestD := "", 1<<30
	for _, c := range cands {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	// A suggestion must keep something of the name: "p" for "q" is no help.
	return best, best != "" && bestD <= max(2, len(name)/3) && bestD < len([]rune(name))
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
