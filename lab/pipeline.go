package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// buildNice is the niceness of the builds lab run streams beside its runs:
// a guest beside a build keeps most of the CPU (nice 10 weighs a tenth of
// nice 0), and the build takes what the guests leave.
const buildNice = 10

// streamKernels builds the kernels of kpaths one after another in one
// background goroutine and sends their runs on batches as soon as they can
// run, so one kernel's runs overlap the builds after it. plan builds a
// kernel and what its scenarios need and hands each batch of runs to send
// as soon as their guest is built (the plain kernel's before the flavours
// and images others need). With buildFirst no batch is sent before every
// kernel is built (the order lab run had before it streamed). Only this
// goroutine builds, so no build waits for another of this lab, and runs
// take no cache lock.
//
// batches holds perKernel batches for each kernel, so the builder never
// waits for the runs; it is closed after the last kernel, or early when ctx
// ends. done is closed once the goroutine has returned: after a cancel,
// once plan has returned and its build's processes are gone.
func streamKernels(ctx context.Context, kpaths []string, buildFirst bool, perKernel int,
	plan func(ctx context.Context, kpath string, send func([]runner.Job))) (batches <-chan []runner.Job, done <-chan struct{}) {
	out := make(chan []runner.Job, len(kpaths)*max(perKernel, 1))
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(out)
		var held [][]runner.Job
		send := func(jobs []runner.Job) {
			if buildFirst {
				held = append(held, jobs)
				return
			}
			select {
			case out <- jobs:
			case <-ctx.Done(): // only if perKernel was too few
			}
		}
		for _, kpath := range kpaths {
			if ctx.Err() != nil {
				return
			}
			plan(ctx, kpath, send)
		}
		for _, jobs := range held {
			if ctx.Err() != nil {
				return
			}
			out <- jobs
		}
	}()
	return out, finished
}

// runStream runs the runs plan sends (see streamKernels) as soon as they
// come, with o (runner.RunStream), and returns when every run and build has
// ended. With o.UntilFail the first FAIL also stops the builds: no run
// would use them.
func runStream(ctx context.Context, kpaths []string, buildFirst bool, perKernel int,
	plan func(context.Context, string, func([]runner.Job)), o runner.StreamOptions) {
	buildCtx, stopBuilds := context.WithCancel(ctx)
	defer stopBuilds()
	batches, built := streamKernels(buildCtx, kpaths, buildFirst, perKernel, plan)
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
	// kernel's first (groupPlan): each group's runs start once its guest is built.
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

// kernel builds the kernel at kpath and what its scenarios need, group by
// group, and sends each group's runs once they can run. A build that fails
// is an ERROR for the scenarios that needed it; the others still run. After
// a cancel it sends nothing more.
func (pl *planner) kernel(ctx context.Context, kpath string, send func([]runner.Job)) {
	for _, group := range pl.groups {
		jobs := pl.group(ctx, kpath, group)
		if ctx.Err() != nil {
			return // a cancelled build: its runs are not wanted
		}
		if len(jobs) > 0 {
			send(jobs)
		}
	}
}

// group builds the guest of the planned scenarios of one group on the
// kernel at kpath and returns their runs, each with its run folder.
func (pl *planner) group(ctx context.Context, kpath string, group []planned) []runner.Job {
	var jobs []runner.Job
	for _, p := range group {
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
