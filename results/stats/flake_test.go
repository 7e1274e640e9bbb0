package stats

import (
	"math"
	"testing"

	"napilab/results"
)

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		fails, n int
		lo, hi   float64
	}{
		// Reference values of the Wilson score interval at z=1.96.
		{0, 20, 0, 0.1611},
		{4, 20, 0.0807, 0.4160},
		{10, 20, 0.2993, 0.7007},
		{20, 20, 0.8389, 1},
		{1, 100, 0.0018, 0.0545},
	} {
		lo, hi := Wilson(tc.fails, tc.n, 1.96)
		if math.Abs(lo-tc.lo) > 5e-4 || math.Abs(hi-tc.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f..%.4f, want %.4f..%.4f", tc.fails, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := Wilson(0, 0, 1.96); lo != 0 || hi != 1 {
		t.Errorf("no runs: %v..%v, want 0..1", lo, hi)
	}
}

func TestSummariseFlakes(t *testing.T) {
	warn := &results.Result{Verdict: results.Fail, Splats: []results.Splat{{Title: "WARNING in napi_disable"}}}
	hang := &results.Result{Verdict: results.Fail, Hang: &results.Hang{Step: "race", Function: "napi_disable"}}
	allowedThenAssert := &results.Result{Verdict: results.Fail, Splats: []results.Splat{{Title: "x", Allowed: "known"}},
		Asserts: []results.Assert{{Name: "no stall", Passed: false}}}
	rs := []*results.Result{{Verdict: results.Pass}, warn, {Verdict: results.Pass}, warn, hang, allowedThenAssert, {Verdict: results.Error}}
	f := SummariseFlakes(rs)
	if f.Runs != 6 || f.Fails != 4 || f.Errors != 1 {
		t.Fatalf("runs %d fails %d errors %d", f.Runs, f.Fails, f.Errors)
	}
	want := map[string]int{"WARNING in napi_disable": 2, "hang in napi_disable": 1, "assertion failed: no stall": 1}
	for k, v := range want {
		if f.Titles[k] != v {
			t.Errorf("title %q counted %d, want %d (all: %v)", k, f.Titles[k], v, f.Titles)
		}
	}
	if got := f.SortedTitles()[0]; got != "WARNING in napi_disable" {
		t.Errorf("most frequent title %q", got)
	}
	if f.Lo > f.Rate || f.Hi < f.Rate {
		t.Errorf("rate %v outside its interval %v..%v", f.Rate, f.Lo, f.Hi)
	}
}
