package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"napilab/kernels"
	"napilab/results"
	"napilab/results/report"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/runner/campaign"
	"napilab/scenarios"
)

// defaultBaselines is where stored baselines live unless --baselines says
// otherwise: a folder of JSON files meant to be committed.
const defaultBaselines = "results/baselines"

// errOwnBaseline: the kernel under test is the perf scenario's baseline, so
// there is nothing to compare.
var errOwnBaseline = errors.New("the kernel is its own baseline")

// budgets converts the budgets that hold in the scenario's perf mode.
func budgets(s *scenarios.Scenario) []stats.Budget {
	var out []stats.Budget
	for _, b := range s.BudgetsInForce() {
		m, drop, rise := b.Bounds()
		out = append(out, stats.Budget{Metric: m, MaxDrop: drop, MaxRise: rise})
	}
	return out
}

// modeParams writes the parameters a perf mode sets, as in force: "threaded=1".
func modeParams(s *scenarios.Scenario) string {
	m := s.Mode()
	if m == "" {
		return ""
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.Perf.Modes[m])) {
		kv = append(kv, k+"="+s.Values[k])
	}
	return strings.Join(kv, ", ")
}

// v0 is the worse of a budget check's verdict and the runs'.
func v0(budgets, runs results.Verdict) results.Verdict {
	if runs.Worse(budgets) {
		return runs
	}
	return budgets
}

// modeTable keeps, per scenario and kernel, each mode's verdict and
// budget changes, to print the modes side by side.
type modeTable map[string]map[string]string

func (mt modeTable) add(scenario, kernel, mode string, v results.Verdict, pc *stats.PerfCheck) {
	if mode == "" {
		return
	}
	key := scenario + " on " + kernel
	if mt[key] == nil {
		mt[key] = map[string]string{}
	}
	var parts []string
	for _, b := range pc.Budgets {
		parts = append(parts, fmt.Sprintf("%s %+.1f%%", b.Budget.Metric, (b.Row.Ratio-1)*100))
	}
	mt[key][mode] = fmt.Sprintf("%s %s (%s)", mode, v, strings.Join(parts, ", "))
}

// print draws the modes of each scenario side by side, where it ran in
// more than one.
func (mt modeTable) print(w io.Writer) {
	for _, key := range slices.Sorted(maps.Keys(mt)) {
		if len(mt[key]) < 2 {
			continue
		}
		var cols []string
		for _, m := range slices.Sorted(maps.Keys(mt[key])) {
			cols = append(cols, mt[key][m])
		}
		fmt.Fprintf(w, "MODES  perf %s: %s\n", key, strings.Join(cols, " | "))
	}
}

// baselineKernel resolves perf.baseline for the kernel spec at kpath: the
// spec of side A, or the name of a stored baseline.
func baselineKernel(s *scenarios.Scenario, kpath string) (spec, stored string, err error) {
	want := s.Perf.Baseline
	switch {
	case want == "" || want == "base":
		k, err := kernels.LoadSpec(kpath)
		if err != nil {
			return "", "", err
		}
		if k.Extends == "" {
			return "", "", fmt.Errorf("%w: %s extends no spec, so perf.baseline %q has nothing to compare it with", errOwnBaseline, k.Name, "base")
		}
		return k.Extends, "", nil
	case strings.HasSuffix(want, ".yaml"):
		if filepath.IsAbs(want) || fileExists(want) {
			return want, "", nil
		}
		// Shipped scenarios name specs from the project's top, as the README does.
		p := filepath.Join(filepath.Dir(scenarios.Shipped(s.Path)), want)
		if fileExists(p) {
			return p, "", nil
		}
		return "", "", fmt.Errorf("%s: perf.baseline %s: no such kernel spec here or at %s", s.Path, want, p)
	}
	return "", want, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runPerf runs a perf scenario: side A (the baseline kernel, or the samples
// of a fitting stored baseline) and side B interleaved, perf.repeat runs
// each, then checks the budgets. Its verdict is the worst of the runs'
// (a splat or a failed assertion is a FAIL whatever the numbers) and the
// budgets'.
func runPerf(ctx context.Context, gs *campaign.Guests, j campaign.PerfJob, o *campaign.RunOptions, out, log io.Writer, rc reach, modes modeTable) results.Verdict {
	s := j.Scenario
	name := fmt.Sprintf("perf %s on %s", campaign.PerfName(s), j.B.Kernel.Spec)
	fail := func(v results.Verdict, format string, a ...any) results.Verdict {
		fmt.Fprintf(out, "%s  %s: %s\n", v, name, fmt.Sprintf(format, a...))
		return v
	}
	host, err := runner.HostClass(ctx, o.Accel)
	if err != nil {
		return fail(results.Error, "%v", err)
	}
	aPath, stored, err := baselineKernel(s, j.KPath)
	if errors.Is(err, errOwnBaseline) {
		fmt.Fprintf(out, "SKIP  %s: %v\n", name, err)
		return results.Pass
	}
	if err != nil {
		return fail(results.Error, "%v", err)
	}
	var saved *stats.Baseline
	var list []*stats.Baseline
	if stored != "" || o.Perf.AgainstBaseline {
		if list, err = stats.LoadBaselines(o.Perf.Baselines); err != nil {
			return fail(results.Error, "%v", err)
		}
	}
	// The measured runs count no calls (probes cost time on one side
	// only); one more run of B counts them after the budgets are checked.
	covered := j.B
	bArm := runner.Arm{Label: j.B.Kernel.Spec, Tag: "b", Cfg: j.B}
	bArm.Cfg.Cover = nil
	var arms []runner.Arm
	aLabel := ""
	if stored != "" {
		var why []string
		for _, b := range list {
			if b.Name == stored {
				saved, why = stats.FindBaseline([]*stats.Baseline{b}, stored, b.Kernel.Key, s.MeasureHash, host)
			}
		}
		if saved == nil {
			if why == nil {
				why = []string{fmt.Sprintf("no stored baseline %q in %s (lab baseline list)", stored, o.Perf.Baselines)}
			}
			return fail(results.Error, "perf.baseline %s does not fit: %s", stored, strings.Join(why, "; "))
		}
		aLabel = saved.Kernel.Spec + " (stored " + saved.Name + ")"
	} else {
		a, err := gs.Config(ctx, aPath, s)
		if err != nil {
			return fail(results.Error, "baseline kernel %s: %v", aPath, err)
		}
		if a.Kernel.Key == j.B.Kernel.Key {
			fmt.Fprintf(out, "SKIP  %s: %v (%s has the same content key)\n", name, errOwnBaseline, aPath)
			return results.Pass
		}
		a.Scenario, a.Accel, a.Params, a.NoPolls = j.B.Scenario, j.B.Accel, j.B.Params, j.B.NoPolls
		a.Cover = nil
		aLabel = a.Kernel.Spec
		if o.Perf.AgainstBaseline {
			var why []string
			saved, why = stats.FindBaseline(list, "", a.Kernel.Key, s.MeasureHash, host)
			if saved != nil {
				aLabel += " (stored " + saved.Name + ")"
			} else {
				fmt.Fprintf(log, "%s: no fitting stored baseline in %s, running %s: %s\n", name, o.Perf.Baselines, a.Kernel.Spec, orNone(why))
			}
		}
		if saved == nil {
			arms = append(arms, runner.Arm{Label: aLabel, Tag: "a", Cfg: a})
		}
	}
	if aLabel == bArm.Label {
		bArm.Label += " (B)"
	}
	arms = append(arms, bArm)
	dir, err := results.NewRunDir(o.Out, "perf-"+strings.ReplaceAll(campaign.PerfName(s), " ", "")+"@"+j.B.Kernel.Spec+campaign.ParamSuffix(j.Params))
	if err != nil {
		return fail(results.Error, "%v", err)
	}
	start := time.Now()
	worst := results.Pass
	each := func(a runner.Arm, i int, r *results.Result) {
		fmt.Fprintf(log, "  %s-%d %-30s %s (%.1fs)\n", a.Tag, i, a.Label, r.Verdict, r.Timings.Total)
		if r.Verdict.Worse(worst) {
			worst = r.Verdict
		}
		if r.Verdict != results.Pass {
			fmt.Fprintf(out, "  run %s-%d on %s: %s %s\n", a.Tag, i, a.Label, r.Verdict, r.Title())
		}
	}
	runs, err := runner.Interleave(ctx, arms, dir, 1, s.Perf.Repeat, each)
	if err != nil {
		return fail(results.Error, "%v (perf folder %s)", err, dir)
	}
	check := func() *stats.PerfCheck {
		samples := runner.Samples(runs)
		if saved != nil {
			for _, x := range saved.Samples {
				x.Kernel = aLabel
				samples = append(samples, x)
			}
		}
		return stats.CheckBudgets(aLabel, bArm.Label, samples, budgets(s), s.Perf.Alpha, o.Perf.Seed)
	}
	pc := check()
	n := s.Perf.Repeat
	mode, params := s.Mode(), modeParams(s)
	if more := secondLook(pc, n, s.Perf.MaxRepeat); more > n && worst == results.Pass {
		// A second look at more runs: the first n runs stay, so the false
		// FAIL rate grows a little over alpha (two looks, not one).
		fmt.Fprintf(log, "%s: INCONCLUSIVE at %d runs per side, running on to %d (perf.max_repeat)\n", name, n, more)
		extra, err := runner.Interleave(ctx, arms, dir, n+1, more, each)
		for label, rs := range extra {
			runs[label] = append(runs[label], rs...)
		}
		if err != nil {
			return fail(results.Error, "%v (perf folder %s)", err, dir)
		}
		n = more
		pc = check()
	}
	pc.Mode, pc.Params = mode, params
	modes.add(s.Name, j.B.Kernel.Spec, mode, v0(pc.Verdict, worst), pc)
	if err := writePerf(dir, pc, runs[aLabel], runs[bArm.Label]); err != nil {
		fmt.Fprintf(log, "note: perf reports not written: %v\n", err)
	}
	v := pc.Verdict
	if worst.Worse(v) {
		v = worst
	}
	cov := perfCoverage(ctx, covered, dir, n+1, log)
	rc.add(j.B.Kernel.Spec, cov)
	shown := string(v)
	if v == results.Pass && cov.NotExercised() {
		shown += ", not exercised"
	}
	fmt.Fprintf(out, "%s  %s against %s (%d runs per side, %.0fs)\n", shown, name, aLabel, n, time.Since(start).Seconds())
	if line := coverageLine(cov); line != "" {
		fmt.Fprintf(out, "  %s\n", line)
	}
	var table strings.Builder
	pc.WriteText(&table)
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		fmt.Fprintf(out, "  %s\n", line)
	}
	fmt.Fprintf(out, "  perf folder: %s (perf.html)\n", dir)
	return v
}

// perfCoverage runs B once more with its cover probes (run i of the perf
// folder) and returns what it reached of the series, or nil when the
// kernel has no series or the run said nothing.
func perfCoverage(ctx context.Context, b runner.Config, dir string, i int, log io.Writer) *results.Coverage {
	if len(b.Cover) == 0 || ctx.Err() != nil {
		return nil
	}
	arm := runner.Arm{Label: b.Kernel.Spec + " (coverage)", Tag: "cover", Cfg: b}
	runs, err := runner.Interleave(ctx, []runner.Arm{arm}, dir, i, i, nil)
	if err != nil || len(runs[arm.Label]) == 0 {
		fmt.Fprintf(log, "coverage run of %s: %v\n", b.Kernel.Spec, err)
		return nil
	}
	return runs[arm.Label][0].Coverage
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

func orNone(why []string) string {
	if len(why) == 0 {
		return "none recorded"
	}
	return strings.Join(why, "; ")
}

// writePerf writes the budget check as perf.json, perf.md and perf.html.
func writePerf(dir string, pc *stats.PerfCheck, a, b []*results.Result) error {
	for name, write := range map[string]func(io.Writer) error{
		"perf.json": pc.WriteJSON,
		"perf.md":   func(w io.Writer) error { pc.WriteMarkdown(w); return nil },
		"perf.html": func(w io.Writer) error { return report.WritePerfHTML(w, pc, a, b) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
