package stats

import (
	"math"
	"testing"
)

func TestPoolRounds(t *testing.T) {
	check := func(mode string, cvs ...float64) *PerfCheck {
		c := &PerfCheck{Baseline: "base", Candidate: "k", Mode: mode}
		for i, cv := range cvs {
			metric := []string{"pps", "drops"}[i]
			c.Budgets = append(c.Budgets, BudgetResult{Budget: Budget{Metric: metric, MaxDrop: 0.2},
				Row: CompareRow{A: Summary{N: 5}, B: Summary{N: 6}}, CV: cv})
		}
		return c
	}
	got := PoolRounds([]Round{
		{"s", check("threaded", 0.3, 0.1)},
		{"s", check("threaded", 0.4, math.NaN())},
		{"s", check("softirq", 0.05)},
		{"a", check("", 0.02)},
	})
	if len(got) != 4 {
		t.Fatalf("got %d figures, want 4: %+v", len(got), got)
	}
	want := []struct {
		scenario, mode, metric string
		pooled                 float64
		rounds                 int
	}{
		{"a", "", "pps", 0.02, 1},
		{"s", "softirq", "pps", 0.05, 1},
		{"s", "threaded", "drops", 0.1, 2},            // the NaN round is left out of the pool
		{"s", "threaded", "pps", math.Sqrt(0.125), 2}, // sqrt((0.09+0.16)/2)
	}
	for i, w := range want {
		g := got[i]
		if g.Scenario != w.scenario || g.Mode != w.mode || g.Budget.Metric != w.metric || len(g.CVs) != w.rounds ||
			math.Abs(g.Pooled-w.pooled) > 1e-12 || g.Runs[0] != 5 {
			t.Errorf("figure %d = %+v, want %+v", i, g, w)
		}
	}
	if r := rms([]float64{math.NaN()}); !math.IsNaN(r) {
		t.Errorf("rms of no finite value = %v, want NaN", r)
	}
}
