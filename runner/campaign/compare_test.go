package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// TestCompare: two arms of one kernel are told apart, runs interleave
// from 1 to Repeat, and the comparison of their figures is written.
func TestCompare(t *testing.T) {
	s, err := scenarios.Open("../../scenarios/perf/nic-flood.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	arm := func(tag string) runner.Arm {
		return runner.Arm{Label: "stock-6.1", Tag: tag, Cfg: runner.Config{Scenario: s}}
	}
	var each int
	fake := func(_ context.Context, arms []runner.Arm, dir string, from, to int, f func(runner.Arm, int, *results.Result)) (map[string][]*results.Result, error) {
		if from != 1 || to != 5 || arms[1].Label != "stock-6.1 (B)" {
			t.Errorf("interleave %d..%d of %q, %q", from, to, arms[0].Label, arms[1].Label)
		}
		out := map[string][]*results.Result{}
		for i := 1; i <= to; i++ {
			for k, a := range arms {
				r := &results.Result{Verdict: results.Pass, Figures: map[string]float64{"nic-udp.rx_pps": float64(1000*(k+1) + i)}}
				f(a, i, r)
				out[a.Label] = append(out[a.Label], r)
			}
		}
		return out, nil
	}
	out := t.TempDir()
	c, dir, err := Comparison{Arms: [2]runner.Arm{arm("a"), arm("b")}, Repeat: 5, Out: out, Alpha: 0.05, Seed: 1, Run: fake,
		Each: func(runner.Arm, int, *results.Result) { each++ }}.Compare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if each != 10 || !strings.HasPrefix(dir, out) {
		t.Errorf("%d runs reported, folder %s", each, dir)
	}
	if len(c.Rows) != 1 || c.Rows[0].Metric != "nic-udp.rx_pps" || !c.Rows[0].Beyond {
		t.Fatalf("rows %+v: want rx_pps, doubled and significant", c.Rows)
	}
	for _, f := range []string{"compare.json", "compare.md"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !strings.Contains(string(b), "rx_pps") {
			t.Errorf("%s: %v", f, err)
		}
	}
}
