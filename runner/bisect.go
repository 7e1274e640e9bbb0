package runner

import (
	"fmt"

	"napilab/results"
)

// Outcome is what one bisect step found about a prefix of a series.
type Outcome int

const (
	// Good: the prefix passed.
	Good Outcome = iota
	// Bad: the prefix failed.
	Bad
	// Skip: the prefix could not be tested (its kernel did not build or
	// boot), as with git bisect skip.
	Skip
)

func (o Outcome) String() string { return [...]string{"good", "bad", "skip"}[o] }

// BisectResult is where the first bad patch is.
type BisectResult struct {
	// First and Last bound the first bad patch: it is one of First..Last,
	// exactly First when First == Last. A range means skipped prefixes
	// hide it.
	First, Last int
	// Skipped lists the prefixes that could not be tested, in probe order.
	Skipped []int
}

// Bisect finds the first k in 1..n for which test(k) is Bad, given that
// test(0) is Good and test(n) is Bad (the caller checks both ends): the
// first patch of a series whose prefix makes a scenario fail. It calls test
// about log2(n) times, more when prefixes are skipped (it then probes the
// untested prefix nearest the middle), and logs each probe.
func Bisect(n int, test func(k int) (Outcome, error), logf func(string, ...any)) (BisectResult, error) {
	if n < 1 {
		return BisectResult{}, fmt.Errorf("nothing to bisect: the series is empty")
	}
	var res BisectResult
	skipped := map[int]bool{}
	lo, hi := 0, n // test(lo) is Good, test(hi) is Bad
	for {
		k := probe(lo, hi, skipped)
		if k < 0 {
			res.First, res.Last = lo+1, hi
			return res, nil
		}
		o, err := test(k)
		if err != nil {
			return res, err
		}
		if logf != nil {
			logf("patches 1..%d: %s", k, o)
		}
		switch o {
		case Good:
			lo = k
		case Bad:
			hi = k
		default:
			skipped[k] = true
			res.Skipped = append(res.Skipped, k)
		}
	}
}

// probe is the untested prefix strictly between lo and hi nearest their
// middle (the lower one on a tie), or -1 when none is left.
func probe(lo, hi int, skipped map[int]bool) int {
	mid := (lo + hi) / 2
	for d := 0; mid-d > lo || mid+d < hi; d++ {
		for _, k := range []int{mid - d, mid + d} {
			if k > lo && k < hi && !skipped[k] {
				return k
			}
		}
	}
	return -1
}

// Booted says whether a run's kernel booted as far as the agent: a FAIL
// that did not is a kernel that does not boot, which lab bisect skips.
func Booted(r *results.Result) bool { return r.Timings.Boot > 0 }
