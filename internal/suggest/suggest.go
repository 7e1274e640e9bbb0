// Package suggest finds the known name a mistyped one was meant to be.
package suggest

// Distance is the Levenshtein distance between a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Closest returns the one name near enough to s to be an obvious typo
// (about one edit in six characters, at least three), or "" when none is
// or two are equally near.
func Closest(s string, names []string) string {
	best, bestD, tie := "", max(3, len(s)/6)+1, false
	for _, n := range names {
		if len(n)-len(s) > bestD || len(s)-len(n) > bestD {
			continue // farther than that: a long name costs nothing
		}
		d := Distance(s, n)
		if d < bestD {
			best, bestD, tie = n, d, false
		} else if d == bestD {
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}
