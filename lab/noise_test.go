package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/stats"
)

// TestPoolNoise: two rounds of one perf check, in the folder lab run -o
// fills, pool to one line per budget with each round's CV.
func TestPoolNoise(t *testing.T) {
	out := t.TempDir()
	for i, cv := range []float64{0.06, 0.08} {
		dir := filepath.Join(out, []string{"round-1", "round-2"}[i])
		if err := os.MkdirAll(filepath.Join(dir, "a-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := (&results.Result{Scenario: "rr-tail"}).Write(filepath.Join(dir, "a-1")); err != nil {
			t.Fatal(err)
		}
		pc := &stats.PerfCheck{Baseline: "stock-6.1", Candidate: "threaded-napi-6.1", Mode: "threaded", Alpha: 0.05, Verdict: results.Pass,
			Budgets: []stats.BudgetResult{{Budget: stats.Budget{Metric: "rr.p50_us", MaxRise: 0.25}, Verdict: results.Pass, CV: cv,
				Row: stats.CompareRow{A: stats.Summary{N: 5}, B: stats.Summary{N: 5}}}}}
		f, err := os.Create(filepath.Join(dir, "perf.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var b strings.Builder
	if err := poolNoise(&b, []string{out}); err != nil {
		t.Fatal(err)
	}
	// sqrt((0.06² + 0.08²)/2) = 7.1%; +25% at 7.1% needs 4 runs a side.
	want := []string{"rr-tail", "threaded", "threaded-napi-6.1 vs stock-6.1", "rr.p50_us", "7.1%", "6.0% 8.0%", "+25%"}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one line:\n%s", b.String())
	}
	for _, w := range want {
		if !strings.Contains(lines[1], w) {
			t.Errorf("line lacks %q:\n%s", w, b.String())
		}
	}
	if f := strings.Fields(lines[1]); f[len(f)-1] != "4" {
		t.Errorf("runs needed %q, want 4:\n%s", f[len(f)-1], b.String())
	}
	if err := poolNoise(&b, []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no perf.json") {
		t.Errorf("a folder without perf checks: %v", err)
	}
}
