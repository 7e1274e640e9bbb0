package stats

import (
	"cmp"
	"math"
	"slices"
)

// Round is one perf check (one round of lab run on a perf scenario) and
// the scenario it ran.
type Round struct {
	Scenario string
	Check    *PerfCheck
}

// RoundNoise is one budgeted figure's noise over rounds of the same
// scenario, mode and kernels: each round's CV as its budget check pooled
// it from both sides (BudgetResult.CV), and their root mean square, the
// noise a budget on the figure should be written with.
type RoundNoise struct {
	Scenario, Mode, Baseline, Candidate string
	Budget                              Budget    // as the last round ran it
	Alpha                               float64   // the last round's significance level
	CVs                                 []float64 // one per round, in the order given; NaN where a round had none
	Runs                                []int     // runs per side of each round (the smaller side)
	Pooled                              float64   // root mean square of the finite CVs; NaN when there is none
}

// PoolRounds groups the rounds' budgets by scenario, mode, kernels and
// metric, in that order, and pools each one's CV over the rounds.
func PoolRounds(rounds []Round) []RoundNoise {
	type key struct{ scenario, mode, a, b, metric string }
	byKey := map[key]*RoundNoise{}
	var keys []key
	for _, r := range rounds {
		c := r.Check
		for _, b := range c.Budgets {
			k := key{r.Scenario, c.Mode, c.Baseline, c.Candidate, b.Budget.Metric}
			n := byKey[k]
			if n == nil {
				n = &RoundNoise{Scenario: r.Scenario, Mode: c.Mode, Baseline: c.Baseline, Candidate: c.Candidate}
				byKey[k] = n
				keys = append(keys, k)
			}
			n.Budget, n.Alpha = b.Budget, c.Alpha
			n.CVs = append(n.CVs, b.CV)
			n.Runs = append(n.Runs, min(b.Row.A.N, b.Row.B.N))
		}
	}
	slices.SortStableFunc(keys, func(x, y key) int {
		return cmp.Or(cmp.Compare(x.scenario, y.scenario), cmp.Compare(x.mode, y.mode), cmp.Compare(x.a, y.a),
			cmp.Compare(x.b, y.b), cmp.Compare(x.metric, y.metric))
	})
	var out []RoundNoise
	for _, k := range keys {
		n := byKey[k]
		n.Pooled = rms(n.CVs)
		out = append(out, *n)
	}
	return out
}

// rms is the root mean square of the finite values; NaN when there is none.
func rms(xs []float64) float64 {
	var sum float64
	var n int
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		sum += x * x
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(sum / float64(n))
}
