package stats

import (
	"fmt"
	"math"
	"sort"

	"napilab/results"
)

// Wilson returns the Wilson score interval of a proportion fails/n at the
// confidence of z (1.96 for 95%). It behaves at 0 and n, unlike the normal
// approximation, which is what flake rates of 0/20 or 1/20 need.
func Wilson(fails, n int, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	p := float64(fails) / float64(n)
	nn := float64(n)
	den := 1 + z*z/nn
	centre := (p + z*z/(2*nn)) / den
	half := z * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn)) / den
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// Flakes summarises repeated runs of one scenario on one kernel.
type Flakes struct {
	Runs, Fails, Errors int
	Flaky               int            // runs that passed only on a retry (or with a flaky kselftest)
	Rate, Lo, Hi        float64        // FAIL rate and its Wilson 95% interval (ERRORs left out)
	Titles              map[string]int // failure title -> count
}

// SummariseFlakes counts failures and their titles over repeated runs.
func SummariseFlakes(rs []*results.Result) Flakes {
	f := Flakes{Titles: map[string]int{}}
	for _, r := range rs {
		switch r.Verdict {
		case results.Error:
			f.Errors++
			continue
		case results.Fail:
			f.Fails++
			f.Titles[r.Title()]++
		}
		if len(r.FlakyLines()) > 0 {
			f.Flaky++
		}
		f.Runs++
	}
	if f.Runs > 0 {
		f.Rate = float64(f.Fails) / float64(f.Runs)
	}
	f.Lo, f.Hi = Wilson(f.Fails, f.Runs, 1.96)
	return f
}

// String is one line: "3/20 failed (15%, 95% CI 5.2%-36%)".
func (f Flakes) String() string {
	s := fmt.Sprintf("%d/%d failed (%.0f%%, Wilson 95%% interval %.1f%%-%.1f%%)", f.Fails, f.Runs, 100*f.Rate, 100*f.Lo, 100*f.Hi)
	if f.Flaky > 0 {
		s += fmt.Sprintf(", %d flaky (passed on retry)", f.Flaky)
	}
	if f.Errors > 0 {
		s += fmt.Sprintf(", %d lab errors not counted", f.Errors)
	}
	return s
}

// SortedTitles lists failure titles, most frequent first.
func (f Flakes) SortedTitles() []string {
	var t []string
	for k := range f.Titles {
		t = append(t, k)
	}
	sort.Slice(t, func(i, j int) bool {
		if f.Titles[t[i]] != f.Titles[t[j]] {
			return f.Titles[t[i]] > f.Titles[t[j]]
		}
		return t[i] < t[j]
	})
	return t
}
