package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	if o.Verdict != results.Pass || !o.Reached.Refused["s2.1"] || o.Reached.Refused["s1"] || o.Reached.Calls["napi_disable"] != 4 {
		t.Errorf("outcome %+v", o)
	}
}

// TestExploreOnAKernel: lab explore runs generated programs on stock-6.1
// and keeps them, the corpus and the runs; triage runs a finding folder's
// reproducer on it (a clean kernel: not seen, exit 0).
func TestExploreOnAKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("boots stock-6.1 four times")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (taps, namespaces)")
	}
	root, lab := buildLab(t)
	out := t.TempDir()
	cmd := exec.Command(lab, "explore", "-k", "kernels/stock-6.1.yaml", "--runs", "3", "--seed", "5001", "--steps", "6", "-o", out)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "3 programs in") || !strings.Contains(string(b), "0 findings") {
		t.Fatalf("lab explore: %v\n%s", err, b)
	}
	progs, _ := filepath.Glob(filepath.Join(out, "programs", "explore-500*.yaml"))
	if _, err := os.Stat(filepath.Join(out, "corpus.json")); err != nil || len(progs) != 3 {
		t.Fatalf("corpus: %v; programs %v", err, progs)
	}
	finding := filepath.Join(out, "findings", "made-up")
	data, _ := os.ReadFile(progs[0])
	if err := os.MkdirAll(finding, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(finding, "minimized.yaml"), data, 0o644)
	os.WriteFile(filepath.Join(finding, "finding.json"), []byte(`{"title": "hang in napi_set_threaded"}`), 0o644)
	cmd = exec.Command(lab, "explore", "triage", finding, "-k", "kernels/stock-6.1.yaml", "--runs", "1")
	cmd.Dir = root
	b, err = cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`stock-6\.1 +6\.1\.\d+ \(1 PASS\)  not seen in 1 runs`).MatchString(string(b)) {
		t.Fatalf("lab explore triage: %v\n%s", err, b)
	}
}

// TestTriageFlavour: triage builds in the finding's flavour unless
// --flavour says otherwise, and a flavour it cannot build is refused
// before any kernel is.
func TestTriageFlavour(t *testing.T) {
	finding := t.TempDir()
	os.WriteFile(filepath.Join(finding, "minimized.yaml"), []byte("name: m\ntimeline: [{sleep: 1s}]\n"), 0o644)
	os.WriteFile(filepath.Join(finding, "finding.json"), []byte(`{"title": "x", "flavour": "sanitized"}`), 0o644)
	cache := t.TempDir()
	if got := execLab(t, "--cache", cache, "explore", "triage", finding, "-k", "../kernels/stock-6.1.yaml"); !strings.Contains(got, `"sanitized"`) {
		t.Errorf("the finding's flavour: %s", got)
	}
	if got := execLab(t, "--cache", cache, "explore", "triage", finding, "-k", "../kernels/stock-6.1.yaml", "--flavour", "odd"); !strings.Contains(got, `"odd"`) {
		t.Errorf("--flavour over the finding's: %s", got)
	}
}
