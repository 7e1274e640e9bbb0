package runner

import "fmt"

// Bisect finds the first k in 1..n for which bad(k) holds, given that
// bad(0) is false and bad(n) is true (the caller checks both ends): the
// first patch of a series whose prefix makes a scenario fail. It calls bad
// about log2(n) times and logs each probe.
func Bisect(n int, bad func(k int) (bool, error), logf func(string, ...any)) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("nothing to bisect: the series is empty")
	}
	lo, hi := 0, n // bad(lo) is false, bad(hi) is true
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		b, err := bad(mid)
		if err != nil {
			return 0, err
		}
		if logf != nil {
			logf("patches 1..%d: %s", mid, map[bool]string{true: "bad", false: "good"}[b])
		}
		if b {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
