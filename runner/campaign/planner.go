package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// Planner turns the planned scenarios into runs, one kernel at a time, for
// streamKernels: it builds what the kernel's scenarios need and prints the
// SKIP and ERROR lines to Out. Worst and what it keeps belong to the
// builder goroutine until the stream is done.
type Planner struct {
	// Config gives the guest part of a scenario's run configuration on a
	// kernel, building what it needs (Guests.Config; a fake in tests).
	Config  ConfigFunc
	Options *RunOptions
	// Groups are the planned scenarios by the guest they boot, the plain
	// kernel's first (GroupPlan): a pass of streamKernels each.
	Groups   [][]Planned
	K, N     int // shard K of N
	Parallel int // guests at once, for the runs line
	Out, Log io.Writer
	// Run runs one configuration; nil means runner.Run (tests pass a fake).
	Run func(context.Context, runner.Config) *results.Result

	// Worst is the worst verdict the planner printed (ERROR for a failed build).
	Worst results.Verdict
	// perf are the perf runs, for after every other run.
	perf []PerfJob
	// dirs are the run folders made; those never run are removed at the end.
	dirs []string
}

// Pass builds the guest of group pass (see GroupPlan) on the kernel at
// kpath and returns its runs (streamKernels' plan).
func (pl *Planner) Pass(ctx context.Context, pass int, kpath string) []runner.Job {
	return pl.group(ctx, kpath, pl.Groups[pass])
}

// group builds the guest of the planned scenarios of one group on the
// kernel at kpath and returns their runs, each with its run folder. A
// build that fails is an ERROR for the scenarios that needed it; the others
// still run. After a cancel it returns none.
func (pl *Planner) group(ctx context.Context, kpath string, group []Planned) []runner.Job {
	o := pl.Options
	var jobs []runner.Job
	for _, p := range group {
		if fl, _ := kernels.ParseFlavour(o.Flavour); fl.Debug && p.Scenario.SkippedOn(scenarios.FlavourDebug) != "" {
			// Known before the build: the guest it would need is never built.
			fmt.Fprintf(pl.Out, "SKIP  %s on %s (%s flavour): %s\n", p.Scenario.Name, kpath, o.Flavour, p.Scenario.SkippedOn(scenarios.FlavourDebug))
			continue
		}
		base, err := pl.Config(ctx, kpath, p.Scenario)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			pl.error(p, kpath, err)
			continue
		}
		if why := p.Scenario.Unsupported(base.Kernel.Release); why != "" {
			fmt.Fprintf(pl.Out, "SKIP  %s on %s (%s): %s\n", p.Scenario.Name, base.Kernel.Spec, base.Kernel.Release, why)
			continue
		}
		s, params, err := ForKernel(base, p.Scenario, p.Params)
		if err != nil {
			pl.error(p, kpath, err)
			continue
		}
		if why := skippedOn(base, s); why != "" {
			fmt.Fprintf(pl.Out, "SKIP  %s on %s (%s): %s\n", p.Scenario.Name, base.Kernel.Spec, base.Kernel.Release, why)
			continue
		}
		if s.Perf != nil {
			if !modesOn(s, pl.specModes(kpath)) {
				fmt.Fprintf(pl.Log, "%s: perf %s left out: the series is about modes %s\n", kpath, perfName(s), strings.Join(pl.specModes(kpath), ", "))
				continue
			}
			cfg := base
			cfg.Scenario, cfg.Accel, cfg.Params, cfg.NoPolls = s, o.Accel, params, o.NoPolls
			pl.perf = append(pl.perf, PerfJob{Scenario: s, Params: p.Params, KPath: kpath, B: cfg})
			continue
		}
		jobs = append(jobs, pl.jobs(p, s, params, base)...)
	}
	jobs = runner.Shard(jobs, pl.K, pl.N)
	for i := range jobs {
		dir, err := results.NewRunDir(o.Out, jobs[i].Name)
		if err != nil {
			fmt.Fprintf(pl.Out, "%s  %s: %v\n", results.Error, jobs[i].Name, err)
			pl.Worst = results.Error
			return jobs[:i]
		}
		jobs[i].Cfg.OutDir = dir
		pl.dirs = append(pl.dirs, dir)
	}
	if len(jobs) > 1 {
		fmt.Fprintf(pl.Log, "%s: %d runs ready, %d at once\n", kpath, len(jobs), pl.Parallel)
	}
	return jobs
}

// specModes are the perf modes the kernel spec at kpath lists (none when
// it does not load: its build reports that).
func (pl *Planner) specModes(kpath string) []string {
	spec, err := kernels.LoadSpec(kpath)
	if err != nil {
		return nil
	}
	return spec.Modes
}

// jobs are the --repeat runs of the scenario s (p for this kernel, with
// params) on the guest of base.
func (pl *Planner) jobs(p Planned, s *scenarios.Scenario, params map[string]string, base runner.Config) []runner.Job {
	o := pl.Options
	group := fmt.Sprintf("%s@%s%s", p.Scenario.Name, base.Kernel.Spec, paramSuffix(p.Params))
	var jobs []runner.Job
	for i := 1; i <= o.Repeat; i++ {
		name := group
		if o.Repeat > 1 {
			name += fmt.Sprintf("#%d", i)
		}
		cfg := base
		if o.KselftestTimeout > 0 {
			cfg.KselftestTimeouts = map[string]time.Duration{}
			for c, d := range base.KselftestTimeouts {
				cfg.KselftestTimeouts[c] = min(d, o.KselftestTimeout)
			}
		}
		if o.Verbose {
			log := pl.Log
			cfg.Logf = func(f string, a ...any) { fmt.Fprintf(log, "  "+f+"\n", a...) }
		}
		cfg.Scenario, cfg.Accel, cfg.Params, cfg.NoPolls = s, o.Accel, params, o.NoPolls
		j := runner.Job{Name: name, Group: group, Estimate: s.Estimate(), Cfg: cfg}
		o.Flakes.Apply(&j)
		jobs = append(jobs, j)
	}
	return jobs
}

// error prints the ERROR of a scenario whose kernel, image or scenario
// could not be made ready for the kernel at kpath.
func (pl *Planner) error(p Planned, kpath string, err error) {
	fmt.Fprintf(pl.Out, "%s  %s%s on %s: %v\n", results.Error, p.Scenario.Name, paramSuffix(p.Params), kpath, err)
	pl.Worst = results.Error
}

// RunAll runs the runs pl plans as their guests are built, telling each
// result to each, and returns their worst verdict and the results by group.
// It returns once the builds have stopped, removing the run folders that
// never ran.
func (pl *Planner) RunAll(ctx context.Context, each func(runner.Job, *results.Result)) (results.Verdict, map[string][]*results.Result) {
	ran := map[string]bool{}
	groups := map[string][]*results.Result{}
	worst := results.Pass
	o := pl.Options
	runStream(ctx, o.Kernels, len(pl.Groups), o.BuildFirst, pl.Pass,
		runner.StreamOptions{Parallel: pl.Parallel, UntilFail: o.UntilFail, Run: pl.Run, Each: func(j runner.Job, r *results.Result) {
			ran[j.Cfg.OutDir] = true
			each(j, r)
			groups[j.Group] = append(groups[j.Group], r)
			if r.Verdict.Worse(worst) {
				worst = r.Verdict
			}
		}})
	for _, dir := range pl.dirs { // the folders of runs --until-fail or Ctrl-C never started
		if !ran[dir] {
			os.Remove(dir) // only if empty
		}
	}
	return worst, groups
}

// PerfJobs are the perf runs of shard K of N, for after every other run.
func (pl *Planner) PerfJobs() []PerfJob {
	var jobs []PerfJob
	for i, j := range pl.perf {
		if i%pl.N == pl.K-1 {
			jobs = append(jobs, j)
		}
	}
	return jobs
}
