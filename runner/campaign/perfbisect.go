package campaign

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"napilab/kernels"
	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/scenarios"
)

// perfBisect finds the first candidate (a series' prefix, a commit) that
// moves metric past its budget: the good end runs perf.repeat times once,
// then each probed candidate as often, and each is checked against the good
// end as lab run checks a perf scenario. The answer goes to stdout, the
// steps to log; dirOf(k) is candidate k's runs' folder.
func perfBisect(ctx context.Context, s *scenarios.Scenario, metric string, c candidates, build buildStep, dirOf func(k int) string,
	config func(*kernels.Spec, *kernels.Artifact) runner.Config, start time.Time, stdout, log io.Writer) error {
	if s.Perf == nil {
		return fmt.Errorf("%s has no perf: block: --metric needs a perf scenario with a budget on the metric", s.Path)
	}
	var budget *stats.Budget
	var names []string
	for _, b := range budgets(s) {
		names = append(names, b.Metric)
		if b.Metric == metric {
			budget = &b
		}
	}
	if budget == nil {
		return fmt.Errorf("%s has no budget on %s (its budgets: %s)", s.Path, metric, strings.Join(names, ", "))
	}
	repeat := s.Perf.Repeat
	runsUsed := 0
	// runs runs prefix k repeat times; an error for a lab ERROR.
	runs := func(k int) ([]*results.Result, error) {
		spec, a, err := build(k)
		if err != nil || spec == nil {
			return nil, err
		}
		arm := runner.Arm{Label: fmt.Sprintf("k%d", k), Tag: "run", Cfg: config(spec, a)}
		rs, err := runner.Interleave(ctx, []runner.Arm{arm}, dirOf(k), 1, repeat, func(_ runner.Arm, i int, r *results.Result) {
			runsUsed++
			fmt.Fprintf(log, "  run %d: %s %s\n", i, r.Verdict, r.Title())
		})
		return rs[arm.Label], err
	}
	baseRuns, err := runs(0)
	if err != nil {
		return err
	}
	if baseRuns == nil {
		return fmt.Errorf("the good end (%s) does not build", c.label(0))
	}
	checks := map[int]stats.BudgetResult{}
	test := func(k int) (runner.Outcome, error) {
		rs, err := runs(k)
		switch {
		case err != nil:
			return runner.Skip, err
		case rs == nil:
			return runner.Skip, nil
		}
		for _, r := range rs {
			if r.Verdict == results.Fail && !runner.Booted(r) {
				fmt.Fprintf(log, "%s: the kernel does not boot, skipped\n", c.label(k))
				return runner.Skip, nil
			}
			if r.Verdict == results.Fail {
				fmt.Fprintf(log, "%s: a run FAILed: %s\n", c.label(k), r.Title())
				return runner.Bad, nil
			}
		}
		pc := stats.CheckBudgets("k0", fmt.Sprintf("k%d", k),
			runner.Samples(map[string][]*results.Result{"k0": baseRuns, fmt.Sprintf("k%d", k): rs}),
			[]stats.Budget{*budget}, s.Perf.Alpha, 1)
		br := pc.Budgets[0]
		checks[k] = br
		fmt.Fprintf(log, "%s: %s %s\n", c.label(k), br.Verdict, br.Reason)
		switch br.Verdict {
		case results.Fail:
			return runner.Bad, nil
		case results.Pass:
			return runner.Good, nil
		case results.Inconclusive:
			return runner.Skip, nil
		}
		return runner.Skip, fmt.Errorf("%s: %s", c.label(k), br.Reason)
	}
	n := c.count()
	switch oc, err := test(n); {
	case err != nil:
		return err
	case oc == runner.Skip:
		return fmt.Errorf("the bad end (%s) does not build or boot, or the noise hides %s: nothing to bisect", c.label(n), metric)
	case oc == runner.Good:
		return fmt.Errorf("the bad end (%s) keeps %s within its budget: nothing to bisect", c.label(n), metric)
	}
	res, err := runner.Bisect(n, test, nil)
	if err != nil {
		return err
	}
	c.print(stdout, res)
	if res.First == res.Last {
		if br, ok := checks[res.First]; ok {
			fmt.Fprintf(stdout, "  %s\n", br.Reason)
		}
	}
	fmt.Fprintf(stdout, "  (%d runs of %d per candidate, %.0fs; runs in %s)\n", runsUsed, repeat, time.Since(start).Seconds(), strings.TrimSuffix(dirOf(0), "/k0"))
	return nil
}
