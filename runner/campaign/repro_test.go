package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/kernels"
	"napilab/results"
)

// TestReproTreeSpec: replay.json may name an ad-hoc spec in the cache's
// specs folder (lab --tree wrote it), not one beside it.
func TestReproTreeSpec(t *testing.T) {
	t.Chdir("../..")
	cache := t.TempDir()
	specs := kernels.SpecsDir(cache)
	os.MkdirAll(specs, 0o755)
	inside := filepath.Join(specs, "tree-linux.yaml")
	outside := filepath.Join(cache, "evil.yaml")
	for _, p := range []string{inside, outside} {
		os.WriteFile(p, []byte("name: x\n"), 0o644)
	}
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"ad-hoc spec", inside, ""},
		{"beside the specs folder", outside, "outside"},
		{"through ..", filepath.Join(specs, "..", "evil.yaml"), "outside"},
	} {
		got, err := ReproSpec("", &results.Replay{KernelSpec: tc.spec}, cache, "kernels")
		switch {
		case tc.want == "" && (err != nil || got != tc.spec):
			t.Errorf("%s: %q, %v; want %s trusted", tc.name, got, err, tc.spec)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.want)
		}
	}
}

// TestReproVerdict: the same title reproduces; a passing original or a
// different title says so.
func TestReproVerdict(t *testing.T) {
	hang := func(fn string) *results.Result {
		return &results.Result{Verdict: results.Fail, Hang: &results.Hang{Step: "x", Function: fn}}
	}
	for _, tc := range []struct {
		was, now *results.Result
		want     string
	}{
		{hang("napi_disable"), hang("napi_disable"), "reproduced: hang in napi_disable"},
		{hang("napi_disable"), hang("napi_set_threaded"), `not reproduced: the run failed with "hang in napi_disable", this one "hang in napi_set_threaded"`},
		{hang("napi_disable"), &results.Result{Verdict: results.Pass}, `not reproduced: the run failed with "hang in napi_disable", this one ""`},
		{&results.Result{Verdict: results.Pass}, hang("napi_disable"), "the original run passed; this one: FAIL"},
	} {
		if got := (&Repro{Original: tc.was}).Verdict(tc.now); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
