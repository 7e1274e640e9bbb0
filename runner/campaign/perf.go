package campaign

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
)

// Perf runs the perf scenarios of a campaign: side A (the baseline kernel,
// or the samples of a fitting stored baseline) and side B interleaved,
// perf.repeat runs each, then the budgets checked. Its lines go to Out,
// the runs' progress to Log.
type Perf struct {
	Options *RunOptions
	// Config gives the guest part of side A's run configuration (Guests.Config).
	Config   ConfigFunc
	Out, Log io.Writer
	// Modes gathers each mode's verdict, for the modes side by side.
	Modes ModeTable
	// Host gives this host's class; nil means runner.HostClass (tests pass a fake).
	Host func(ctx context.Context, accel string) (stats.Host, error)
	// Interleave runs the arms; nil means runner.Interleave (tests pass a fake).
	Interleave Interleaver
}

// Run runs the perf scenario of j and returns its verdict, the worst of
// the runs' (a splat or a failed assertion is a FAIL whatever the numbers)
// and the budgets', and what B's run with the cover probes reached.
func (p *Perf) Run(ctx context.Context, j PerfJob) (results.Verdict, *results.Coverage) {
	s := j.Scenario
	name := fmt.Sprintf("perf %s on %s", perfName(s), j.B.Kernel.Spec)
	fail := func(format string, a ...any) (results.Verdict, *results.Coverage) {
		fmt.Fprintf(p.Out, "%s  %s: %s\n", results.Error, name, fmt.Sprintf(format, a...))
		return results.Error, nil
	}
	host, err := p.host(ctx, p.Options.Accel)
	if err != nil {
		return fail("%v", err)
	}
	a, skip, err := p.sideA(ctx, j, name, host)
	switch {
	case skip != "":
		fmt.Fprintf(p.Out, "SKIP  %s: %s\n", name, skip)
		return results.Pass, nil
	case err != nil:
		return fail("%v", err)
	}
	// The measured runs count no calls (probes cost time on one side
	// only); one more run of B counts them after the budgets are checked.
	bArm := runner.Arm{Label: j.B.Kernel.Spec, Tag: "b", Cfg: j.B}
	bArm.Cfg.Cover = nil
	if a.label == bArm.Label {
		bArm.Label += " (B)"
	}
	arms := append(a.arms, bArm)
	dir, err := results.NewRunDir(p.Options.Out, "perf-"+strings.ReplaceAll(perfName(s), " ", "")+"@"+j.B.Kernel.Spec+paramSuffix(j.Params))
	if err != nil {
		return fail("%v", err)
	}
	start := time.Now()
	worst := results.Pass
	each := func(a runner.Arm, i int, r *results.Result) {
		fmt.Fprintf(p.Log, "  %s-%d %-30s %s (%.1fs)\n", a.Tag, i, a.Label, r.Verdict, r.Timings.Total)
		worst = worse(worst, r.Verdict)
		if r.Verdict != results.Pass {
			fmt.Fprintf(p.Out, "  run %s-%d on %s: %s %s\n", a.Tag, i, a.Label, r.Verdict, r.Title())
		}
	}
	runs, err := p.Interleave.interleave(ctx, arms, dir, 1, s.Perf.Repeat, each)
	if err != nil {
		return fail("%v (perf folder %s)", err, dir)
	}
	check := func() *stats.PerfCheck {
		return stats.CheckBudgets(a.label, bArm.Label, a.samples(runs), budgets(s), s.Perf.Alpha, p.Options.Perf.Seed)
	}
	pc := check()
	n := s.Perf.Repeat
	if more := secondLook(pc, n, s.Perf.MaxRepeat); more > n && worst == results.Pass {
		// A second look at more runs: the first n runs stay, so the false
		// FAIL rate grows a little over alpha (two looks, not one).
		fmt.Fprintf(p.Log, "%s: INCONCLUSIVE at %d runs per side, running on to %d (perf.max_repeat)\n", name, n, more)
		extra, err := p.Interleave.interleave(ctx, arms, dir, n+1, more, each)
		for label, rs := range extra {
			runs[label] = append(runs[label], rs...)
		}
		if err != nil {
			return fail("%v (perf folder %s)", err, dir)
		}
		n = more
		pc = check()
	}
	pc.Mode, pc.Params = s.Mode(), modeParams(s)
	v := worse(pc.Verdict, worst)
	p.Modes.add(s.Name, j.B.Kernel.Spec, pc.Mode, v, pc)
	if err := writePerf(dir, pc, runs[a.label], runs[bArm.Label]); err != nil {
		fmt.Fprintf(p.Log, "note: perf reports not written: %v\n", err)
	}
	cov := p.coverage(ctx, j.B, dir, n+1)
	shown := string(v)
	if v == results.Pass && cov.NotExercised() {
		shown += ", not exercised"
	}
	fmt.Fprintf(p.Out, "%s  %s against %s (%d runs per side, %.0fs)\n", shown, name, a.label, n, time.Since(start).Seconds())
	if line := CoverageLine(cov); line != "" {
		fmt.Fprintf(p.Out, "  %s\n", line)
	}
	var table strings.Builder
	pc.WriteText(&table)
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		fmt.Fprintf(p.Out, "  %s\n", line)
	}
	fmt.Fprintf(p.Out, "  perf folder: %s (perf.html)\n", dir)
	return v, cov
}

// coverage runs B once more with its cover probes (run i of the perf
// folder) and returns what it reached of the series, or nil when the
// kernel has no series or the run said nothing.
func (p *Perf) coverage(ctx context.Context, b runner.Config, dir string, i int) *results.Coverage {
	if len(b.Cover) == 0 || ctx.Err() != nil {
		return nil
	}
	arm := runner.Arm{Label: b.Kernel.Spec + " (coverage)", Tag: "cover", Cfg: b}
	runs, err := p.Interleave.interleave(ctx, []runner.Arm{arm}, dir, i, i, nil)
	if err != nil || len(runs[arm.Label]) == 0 {
		fmt.Fprintf(p.Log, "coverage run of %s: %v\n", b.Kernel.Spec, err)
		return nil
	}
	return runs[arm.Label][0].Coverage
}

func (p *Perf) host(ctx context.Context, accel string) (stats.Host, error) {
	if p.Host != nil {
		return p.Host(ctx, accel)
	}
	return runner.HostClass(ctx, accel)
}

// secondLook returns the runs per side to go on to when the budgets are
// undecided at n runs: maxRepeat, unless no undecided budget could be
// decided there (its runs needed are beyond it), or n when there is nothing
// to look at again.
func secondLook(pc *stats.PerfCheck, n, maxRepeat int) int {
	if pc.Verdict != results.Inconclusive || maxRepeat <= n {
		return n
	}
	for _, b := range pc.Budgets {
		if b.Verdict == results.Inconclusive && b.Needed <= maxRepeat {
			return maxRepeat
		}
	}
	return n
}

// worse is the worse of two verdicts (a when they are as bad).
func worse(a, b results.Verdict) results.Verdict {
	if b.Worse(a) {
		return b
	}
	return a
}
