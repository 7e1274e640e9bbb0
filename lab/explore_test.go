package main

import (
	"testing"

	"napilab/results"
)

// TestExploreTitles: findings are deduplicated by title without what
// differs between programs, and their folders are safe names.
func TestExploreTitles(t *testing.T) {
	hangIn := func(fn, step string) *results.Result {
		return &results.Result{Verdict: results.Fail, Hang: &results.Hang{Step: step, Function: fn}}
	}
	if a, b := dedupTitle(hangIn("", "s3")), dedupTitle(hangIn("", "s7.2")); a != b {
		t.Errorf("hangs without a function in two steps: %q and %q, want one finding", a, b)
	}
	if got := dedupTitle(hangIn("napi_set_threaded", "s3")); got != "hang in napi_set_threaded" {
		t.Errorf("title %q", got)
	}
}

// TestExploreOutcome: the steps the kernel refused and the calls counted
// reach the corpus.
func TestExploreOutcome(t *testing.T) {
	r := &results.Result{Verdict: results.Pass,
		Steps:    []results.Step{{Name: "s1"}, {Name: "s2.1", Tolerated: 3}},
		Coverage: &results.Coverage{Funcs: []results.FuncCalls{{CoverFunc: results.CoverFunc{Func: "napi_disable"}, Calls: 4}}}}
	o := outcome(r)
	if o.Verdict != "PASS" || !o.Reached.Refused["s2.1"] || o.Reached.Refused["s1"] || o.Reached.Calls["napi_disable"] != 4 {
		t.Errorf("outcome %+v", o)
	}
}
