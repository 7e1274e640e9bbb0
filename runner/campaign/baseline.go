package campaign

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/scenarios"
)

// Recorder records stored baselines: one arm's runs on this host, every
// one passing, with each run's figures.
type Recorder struct {
	Name   string // the baseline's name ("": <scenario>@<kernel>)
	Repeat int    // runs
	Out    string // the folder for the runs' folder
	Dir    string // the stored baselines' folder
	Host   stats.Host
	Log    io.Writer // a line per run
	// Interleave runs the arm; nil means runner.Interleave (tests pass a fake).
	Interleave Interleaver
}

// Record runs arm Repeat times and stores the baseline; it returns it, the
// file it is stored in and the runs' folder.
func (rc *Recorder) Record(ctx context.Context, arm runner.Arm) (b *stats.Baseline, path, dir string, err error) {
	s := arm.Cfg.Scenario
	name := rc.Name
	if name == "" {
		name = stats.DefaultBaselineName(s.Name, arm.Cfg.Kernel)
	}
	if err := stats.CheckBaselineName(name); err != nil {
		return nil, "", "", fmt.Errorf("bad --name: %w", err)
	}
	if dir, err = results.NewRunDir(rc.Out, "baseline-"+name); err != nil {
		return nil, "", "", err
	}
	arm.Label = "baseline"
	runs, err := rc.Interleave.interleave(ctx, []runner.Arm{arm}, dir, 1, rc.Repeat, func(a runner.Arm, i int, r *results.Result) {
		fmt.Fprintf(rc.Log, "run %d/%d %s (%.1fs)\n", i, rc.Repeat, r.Verdict, r.Timings.Total)
	})
	if err != nil {
		return nil, "", dir, err
	}
	for i, r := range runs[arm.Label] {
		if r.Verdict != results.Pass {
			return nil, "", dir, fmt.Errorf("run %d %s (%s): a baseline is recorded from passing runs only (runs in %s)", i+1, r.Verdict, r.Title(), dir)
		}
	}
	k := arm.Cfg.Kernel
	if rs := runs[arm.Label]; len(rs) > 0 {
		k.Release = rs[0].Kernel.Release
	}
	k.BzImage = "" // a path of this machine
	b = &stats.Baseline{Name: name, Kernel: k, Scenario: s.Name, ScenarioHash: s.MeasureHash,
		Params: arm.Cfg.Params, Host: rc.Host, Repeat: rc.Repeat, Created: time.Now().UTC(), Samples: runner.Samples(runs)}
	path, err = stats.SaveBaseline(rc.Dir, b)
	return b, path, dir, err
}

// SmallestBudget is the least tolerance n runs per side resolve at noise cv
// (alpha 0.05, 80% power), in whole percent; NaN when cv is unknown.
func SmallestBudget(cv float64, n int) float64 {
	if math.IsNaN(cv) {
		return math.NaN()
	}
	for tol := 0.01; tol < 10; tol += 0.01 {
		if stats.RunsNeeded(max(cv, 1e-9), tol, scenarios.DefaultAlpha, scenarios.PerfPower) <= n {
			return tol
		}
	}
	return math.Inf(1)
}

// RunsOf is the distinct runs a baseline's samples come from.
func RunsOf(b *stats.Baseline) map[int]bool {
	runs := map[int]bool{}
	for _, s := range b.Samples {
		runs[s.Run] = true
	}
	return runs
}
