package runner

import (
	"slices"
	"testing"
)

// TestBisectSkip: prefixes whose kernel does not build or boot are skipped
// like git bisect skip; the first bad patch is then a range whose other
// members were all skipped, and the result names the skipped prefixes.
func TestBisectSkip(t *testing.T) {
	for n := 2; n <= 8; n++ {
		for culprit := 1; culprit <= n; culprit++ {
			for mask := 0; mask < 1<<(n-1); mask++ {
				broken := func(k int) bool { return k > 0 && k < n && mask&(1<<(k-1)) != 0 }
				var probed []int
				got, err := Bisect(n, func(k int) (Outcome, error) {
					probed = append(probed, k)
					switch {
					case broken(k):
						return Skip, nil
					case k >= culprit:
						return Bad, nil
					}
					return Good, nil
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.First > culprit || got.Last < culprit {
					t.Fatalf("n=%d culprit=%d broken=%b: %d..%d misses the culprit", n, culprit, mask, got.First, got.Last)
				}
				for k := got.First; k < got.Last; k++ {
					if !slices.Contains(got.Skipped, k) {
						t.Fatalf("n=%d culprit=%d broken=%b: %d..%d holds %d, which was not skipped", n, culprit, mask, got.First, got.Last, k)
					}
				}
				for _, k := range got.Skipped {
					if !broken(k) {
						t.Fatalf("n=%d: %d skipped but builds", n, k)
					}
				}
				if len(probed) > n-1 {
					t.Fatalf("n=%d: %d probes", n, len(probed))
				}
			}
		}
	}
}

// TestBisectSkipExample: with patch 5 of 8 unbuildable and patch 5 the
// culprit, the answer is "5 or 6", and 5 is named as skipped.
func TestBisectSkipExample(t *testing.T) {
	got, err := Bisect(8, func(k int) (Outcome, error) {
		switch {
		case k == 5:
			return Skip, nil
		case k >= 5:
			return Bad, nil
		}
		return Good, nil
	}, nil)
	if err != nil || got.First != 5 || got.Last != 6 || !slices.Equal(got.Skipped, []int{5}) {
		t.Errorf("Bisect = %+v, %v; want 5..6 with 5 skipped", got, err)
	}
}
