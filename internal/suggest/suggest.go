// Package suggest finds, for a name a user got wrong, the known name they
// most likely meant: the one "did you mean" implementation behind graft's
// messages about configuration keys, profiles, templates and parameters.
package suggest

import (
	"fmt"
	"slices"
	"strings"
)

// Closest returns the known name nearest to name (by edit distance,
// ignoring case), and whether it is near enough to be the one meant: at
// most two edits, or a third of name's length for longer names. Ties go
// to the name first in sorted order, so the answer is deterministic.
func Closest(name string, known []string) (string, bool) {
	sorted := slices.Sorted(slices.Values(known))
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range sorted {
		if d := editDistance(lower, strings.ToLower(k)); bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, best != "" && bestDist <= max(2, len(name)/3)
}

// Hint is what a message about the unknown name adds: ` (did you mean
// "x"?)` when a known name is near, else "; " + what + ": " and the known
// names, sorted (nothing when none are known).
func Hint(name string, known []string, what string) string {
	if best, ok := Closest(name, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(known) == 0 {
		return ""
	}
	return "; " + what + ": " + strings.Join(slices.Sorted(slices.Values(known)), ", ")
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
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
