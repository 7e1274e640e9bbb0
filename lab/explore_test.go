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
	for title, want := range map[string]string{
		"hang in napi_set_threaded":                     "hang-in-napi_set_threaded",
		"WARNING in napi_disable (net/core/dev.c:6402)": "WARNING-in-napi_disable-net-core-dev-c-6402",
		"../../etc":                              "etc",
		"..":                                     "finding",
		"":                                       "finding",
		"invariant failed: threaded-not-softirq": "invariant-failed-threaded-not-softirq",
	} {
		if got := slug(title); got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
	}
}
