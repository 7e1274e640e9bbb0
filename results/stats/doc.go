// Package stats decides what repeated runs say: whether one kernel's
// figures differ from another's beyond the run-to-run noise (Compare),
// whether a candidate keeps within performance budgets against a baseline
// (CheckBudgets, with stored baselines), how noisy a metric is and how many
// runs would decide (Noise, RunsNeeded), and flake rates (SummariseFlakes).
//
//	p := stats.CheckBudgets("baseline", "candidate", samples, budgets, 0.05, seed)
//	p.WriteText(os.Stdout)
package stats
