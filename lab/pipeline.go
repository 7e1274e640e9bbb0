package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// buildNice is the niceness of the builds lab run streams beside its runs:
// a guest beside a build keeps most of the CPU (nice 10 weighs a tenth of
// nice 0), and the build takes what the guests leave.
const buildNice = 10

// streamKernels builds in one background goroutine, in passes, and sends
// each batch of runs on batches as soon as its guest is built, so runs
// overlap the builds after them. plan(ctx, pass, kpath) builds the guest
// the runs of that pass boot on the kernel at kpath and returns them: pass
// 0 is the plain kernel's, later ones the flavours and images some
// scenarios need, so every kernel's plain runs come before any kernel's
// flavours are built. Kernels build in the order of kpaths. With buildFirst
// no batch is sent before every build is done (lab run's order before it
// streamed). Only this goroutine builds, so no build of this lab waits for
// another, and runs take no cache lock.
//
// batches holds every batch (the builder never waits for the runs) and is
// closed after the last, or early when ctx ends. done is closed once the
// goroutine has returned: after a cancel, once plan has returned and its
// build's processes are gone.
func streamKernels(ctx context.Context, kpaths []string, passes int, buildFirst bool,
	plan func(ctx context.Context, pass int, kpath string) []runner.Job) (batches <-chan []runner.Job, done <-chan struct{}) {
	out := make(chan []runner.Job, len(kpaths)*passes)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(out)
		var held [][]runner.Job
		for pass := range passes {
			for _, kpath := range kpaths {
				if ctx.Err() != nil {
					return
				}
				jobs := plan(ctx, pass, kpath)
				switch {
				case ctx.Err() != nil:
					return // a cancelled build: its runs are not wanted
				case buildFirst:
					held = append(held, jobs)
				case len(jobs) > 0:
					out <- jobs
				}
			}
		}
		for _, jobs := range held {
			if len(jobs) > 0 {
				out <- jobs
			}
		}
	}()
	return out, finished
}

// runStream runs the runs plan returns (see streamKernels) as soon as they
// come, with o (runner.RunStream), and returns when every run and build has
// ended. With o.UntilFail the first FAIL also stops the builds: no run
// would use them.
func runStream(ctx context.Context, kpaths []string, passes int, buildFirst bool,
	plan func(context.Context, int, string) []runner.Job, o runner.StreamOptions) {
	buildCtx, stopBuilds := context.WithCancel(ctx)
	defer stopBuilds()
	batches, built := streamKernels(buildCtx, kpaths, passes, buildFirst, plan)
	each := o.Each
	o.Each = func(j runner.Job, r *results.Result) {
		if each != nil {
			each(j, r)
		}
		if o.UntilFail && r.Verdict == results.Fail {
			stopBuilds()
		}
	}
	runner.RunStream(ctx, batches, o)
	stopBuilds() // RunStream returned early: ctx ended or a run FAILed
	<-built
}

// planner turns the planned scenarios into runs, one kernel at a time, for
// streamKernels: it builds what the kernel's scenarios need and prints the
// SKIP and ERROR lines. The fields from worst on belong to the builder
// goroutine until streamKernels is done.
type planner struct {
	// config gives the guest part of a scenario's run configuration on a
	// kernel, building what it needs (gs.config; a fake in tests).
	config func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error)
	o      *runOptions
	// groups are the planned scenarios by the guest they boot, the plain
	// kernel's first (groupPlan): a pass of streamKernels each.
	groups   [][]planned
	k, n     int // shard k of n
	parallel int // guests at once, for the runs line
	out, log io.Writer

	// worst is the worst verdict the planner printed (ERROR for a failed build).
	worst results.Verdict
	// perf are the perf runs, for after every other run.
	perf []perfJob
	// dirs are the run folders made; those never run are removed at the end.
	dirs []string
}

// pass builds the guest of group pass (see groupPlan) on the kernel at
// kpath and returns its runs (streamKernels' plan).
func (pl *planner) pass(ctx context.Context, pass int, kpath string) []runner.Job {
	return pl.group(ctx, kpath, pl.groups[pass])
}

// group builds the guest of the planned scenarios of one group on the
// kernel at kpath and returns their runs, each with its run folder. A
// build that fails is an ERROR for the scenarios that needed it; the others
// still run. After a cancel it returns none.
func (pl *planner) group(ctx context.Context, kpath string, group []planned) []runner.Job {
	var jobs []runner.Job
	for _, p := range group {
		if fl, _ := kernels.ParseFlavour(pl.o.flavour); fl.Debug && p.s.SkippedOn(scenarios.FlavourDebug) != "" {
			// Known before the build: the guest it would need is never built.
			fmt.Fprintf(pl.out, "SKIP  %s on %s (%s flavour): %s\n", p.s.Name, kpath, pl.o.flavour, p.s.SkippedOn(scenarios.FlavourDebug))
			continue
		}
		base, err := pl.config(ctx, kpath, p.s)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			pl.error(p, kpath, err)
			continue
		}
		if why := p.s.Unsupported(base.Kernel.Release); why != "" {
			fmt.Fprintf(pl.out, "SKIP  %s on %s (%s): %s\n", p.s.Name, base.Kernel.Spec, base.Kernel.Release, why)
			continue
		}
		s, params, err := forKernel(base, p.s, p.params)
		if err != nil {
			pl.error(p, kpath, err)
			continue
		}
		if why := skippedOn(base, s); why != "" {
			fmt.Fprintf(pl.out, "SKIP  %s on %s (%s): %s\n", p.s.Name, base.Kernel.Spec, base.Kernel.Release, why)
			continue
		}
		if s.Perf != nil {
			if !modesOn(s, pl.specModes(kpath)) {
				fmt.Fprintf(pl.log, "%s: perf %s left out: the series is about modes %s\n", kpath, perfName(s), strings.Join(pl.specModes(kpath), ", "))
				continue
			}
			cfg := base
			cfg.Scenario, cfg.Accel, cfg.Params, cfg.NoPolls = s, pl.o.accel, params, pl.o.noPolls
			pl.perf = append(pl.perf, perfJob{s: s, params: p.params, kpath: kpath, b: cfg})
			continue
		}
		jobs = append(jobs, pl.jobs(p, s, params, base)...)
	}
	jobs = runner.Shard(jobs, pl.k, pl.n)
	for i := range jobs {
		dir, err := results.NewRunDir(pl.o.out, jobs[i].Name)
		if err != nil {
			fmt.Fprintf(pl.out, "%s  %s: %v\n", results.Error, jobs[i].Name, err)
			pl.worst = results.Error
			return jobs[:i]
		}
		jobs[i].Cfg.OutDir = dir
		pl.dirs = append(pl.dirs, dir)
	}
	if len(jobs) > 1 {
		fmt.Fprintf(pl.log, "%s: %d runs ready, %d at once\n", kpath, len(jobs), pl.parallel)
	}
	return jobs
}

// specModes are the perf modes the kernel spec at kpath lists (none when
// it does not load: its build reports that).
func (pl *planner) specModes(kpath string) []string {
	spec, err := kernels.LoadSpec(kpath)
	if err != nil {
		return nil
	}
	return spec.Modes
}

// groupPlan splits the plan by the guest each scenario boots (key: "" for
// the plain one), the plain group first, the others in the plan's order.
func groupPlan(plan []planned, key func(*scenarios.Scenario) string) [][]planned {
	index := map[string]int{"": 0}
	groups := [][]planned{nil}
	for _, p := range plan {
		k := key(p.s)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	if len(groups[0]) == 0 {
		groups = groups[1:]
	}
	return groups
}

// jobs are the --repeat runs of the scenario s (p for this kernel, with
// params) on the guest of base.
func (pl *planner) jobs(p planned, s *scenarios.Scenario, params map[string]string, base runner.Config) []runner.Job {
	o := pl.o
	group := fmt.Sprintf("%s@%s%s", p.s.Name, base.Kernel.Spec, paramSuffix(p.params))
	var jobs []runner.Job
	for i := 1; i <= o.repeat; i++ {
		name := group
		if o.repeat > 1 {
			name += fmt.Sprintf("#%d", i)
		}
		cfg := base
		if o.kselftestTimeout > 0 {
			cfg.KselftestTimeouts = map[string]time.Duration{}
			for c, d := range base.KselftestTimeouts {
				cfg.KselftestTimeouts[c] = min(d, o.kselftestTimeout)
			}
		}
		if o.verbose {
			log := pl.log
			cfg.Logf = func(f string, a ...any) { fmt.Fprintf(log, "  "+f+"\n", a...) }
		}
		cfg.Scenario, cfg.Accel, cfg.Params, cfg.NoPolls = s, o.accel, params, o.noPolls
		j := runner.Job{Name: name, Group: group, Estimate: s.Estimate(), Cfg: cfg}
		o.flakes.apply(&j)
		jobs = append(jobs, j)
	}
	return jobs
}

// error prints the ERROR of a scenario whose kernel, image or scenario
// could not be made ready for the kernel at kpath.
func (pl *planner) error(p planned, kpath string, err error) {
	fmt.Fprintf(pl.out, "%s  %s%s on %s: %v\n", results.Error, p.s.Name, paramSuffix(p.params), kpath, err)
	pl.worst = results.Error
}

// planMemory is the most guest RAM a planned scenario asks for, for the
// bound on guests at once (known before any kernel is built).
func planMemory(plan []planned) int {
	memory := 0
	for _, p := range plan {
		memory = max(memory, p.s.Machine.MemoryMB)
		if p.s.NeedsDebian() {
			memory = max(memory, debianMemoryMB)
		}
	}
	return memory
}

// syncWriter serializes the writes of the writers sharing mu: while lab run
// streams, builds and runs print from two goroutines. Each verdict is one
// write (printVerdict), so a build's line never lands inside one.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
