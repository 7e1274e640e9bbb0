package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// Bisector holds what every step of a bisect shares: the scenario, the
// image its runs boot, the bisect folder, the runs so far.
type Bisector struct {
	CacheDir string
	Scenario *scenarios.Scenario
	Params   map[string]string
	Flavour  kernels.Flavour
	Accel    string
	Runs     int       // runs per candidate (stopping at the first FAIL)
	Metric   string    // perf bisect: the budgeted metric
	Log      io.Writer // each step's lines
	// Run runs one configuration; nil means runner.Run (tests pass a fake).
	Run func(context.Context, runner.Config) *results.Result

	img      *images.Image
	out      string // the bisect folder
	specPath string // the spec recorded in replay.json
	runsUsed int
	start    time.Time
}

// Open loads the scenario at file for the flavour (debug when it asks for
// it) and builds the agent-only image its runs boot.
func (b *Bisector) Open(ctx context.Context, file string) error {
	b.start = time.Now()
	var err error
	if b.Scenario, err = scenarios.Open(file, b.Params); err != nil {
		return err
	}
	if b.Scenario.Machine.Flavour == scenarios.FlavourDebug {
		b.Flavour.Debug = true
	}
	if b.Flavour.Debug {
		if b.Scenario, b.Params, err = b.Scenario.ForFlavour(scenarios.FlavourDebug, b.Params); err != nil {
			return err
		}
	}
	if b.Scenario.NeedsDebian() {
		// Each bisect step would rebuild a kselftest flavour from scratch.
		return fmt.Errorf("%s needs the Debian image (kselftest steps): lab bisect runs agent-only scenarios; bisect with lab run -k on kselftest-flavoured specs by hand", b.Scenario.Name)
	}
	b.img, err = images.Build(ctx, images.Options{CacheDir: b.CacheDir})
	return err
}

// config is the run configuration of the scenario on a built kernel.
func (b *Bisector) config(spec *kernels.Spec, a *kernels.Artifact) runner.Config {
	cfg := GuestConfig(b.specPath, spec, a, b.img)
	cfg.Scenario, cfg.Accel, cfg.Params = b.Scenario, b.Accel, b.Params
	return cfg
}

// build builds spec; nil, nil when it does not build (a skip).
func (b *Bisector) build(ctx context.Context, label string, spec *kernels.Spec) (*kernels.Artifact, error) {
	a, err := kernels.Build(ctx, spec.Flavoured(b.Flavour), kernels.Options{CacheDir: b.CacheDir})
	var be *kernels.BuildError
	if errors.As(err, &be) {
		fmt.Fprintf(b.Log, "%s: the kernel does not build, skipped: %v\n", label, be)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("build of %s: %w", label, err)
	}
	how := fmt.Sprintf("built: %d objects in %.0fs", a.Info.Objects, a.Info.Seconds)
	if a.Cached {
		how = "cached"
	}
	fmt.Fprintf(b.Log, "%s: kernel %s (%s)\n", label, spec.Flavoured(b.Flavour).Name, how)
	return a, nil
}

// runs runs the scenario up to Runs times on a built kernel (spec as
// flavoured): Bad at the first FAIL, Skip when the kernel does not boot,
// Good when every run passed.
func (b *Bisector) runs(ctx context.Context, label, dir string, spec *kernels.Spec, a *kernels.Artifact) (runner.Outcome, error) {
	run := b.Run
	if run == nil {
		run = runner.Run
	}
	for i := 1; i <= b.Runs; i++ {
		b.runsUsed++
		cfg := b.config(spec, a)
		cfg.OutDir = filepath.Join(b.out, fmt.Sprintf("%s-run%d", dir, i))
		r := run(ctx, cfg)
		fmt.Fprintf(b.Log, "  run %d: %s %s\n", i, r.Verdict, r.Title())
		switch {
		case ctx.Err() != nil:
			return runner.Good, ctx.Err()
		case r.Verdict == results.Error:
			return runner.Good, fmt.Errorf("lab error with %s: %v", label, r.Reasons)
		case r.Verdict == results.Fail && !runner.Booted(r):
			fmt.Fprintf(b.Log, "%s: the kernel does not boot, skipped\n", label)
			return runner.Skip, nil
		case r.Verdict == results.Fail:
			return runner.Bad, nil
		}
	}
	return runner.Good, nil
}

// bisect bisects the candidates c ("series", "range" in errors) built by
// build: with Metric a perf bisect (perfDir(k): candidate k's folder), else
// up to Runs runs of each candidate (runDir(k): its runs' prefix). The
// answer and the runs it took go to stdout.
func (b *Bisector) bisect(ctx context.Context, c candidates, what string, build buildStep, perfDir, runDir func(k int) string, stdout io.Writer) error {
	if b.Metric != "" {
		return perfBisect(ctx, b.Scenario, b.Metric, c, build, func(k int) string { return filepath.Join(b.out, perfDir(k)) }, b.config, b.start, stdout, b.Log)
	}
	test := func(k int) (runner.Outcome, error) {
		spec, a, err := build(k)
		if err != nil || spec == nil {
			return runner.Skip, err
		}
		return b.runs(ctx, c.label(k), runDir(k), spec, a)
	}
	if _, err := search(c, what, b.Runs, test, stdout, b.Log); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  (%d runs, %.0fs; runs in %s)\n", b.runsUsed, time.Since(b.start).Seconds(), b.out)
	return nil
}

// search checks the ends (the bad one first: it is the likelier to be
// wrong), bisects between them, logging each step, and prints the answer.
// what names the candidates in errors ("series", "range").
func search(c candidates, what string, runs int, test func(k int) (runner.Outcome, error), stdout, log io.Writer) (runner.BisectResult, error) {
	logged := func(k int) (runner.Outcome, error) {
		oc, err := test(k)
		if err == nil {
			fmt.Fprintf(log, "%s: %s\n", c.label(k), oc)
		}
		return oc, err
	}
	n := c.count()
	switch oc, err := logged(n); {
	case err != nil:
		return runner.BisectResult{}, err
	case oc == runner.Skip:
		return runner.BisectResult{}, fmt.Errorf("the bad end of the %s (%s) does not build or boot: nothing to bisect", what, c.label(n))
	case oc == runner.Good:
		return runner.BisectResult{}, fmt.Errorf("the bad end of the %s (%s) passed %d runs: nothing to bisect", what, c.label(n), runs)
	}
	switch oc, err := logged(0); {
	case err != nil:
		return runner.BisectResult{}, err
	case oc == runner.Skip:
		return runner.BisectResult{}, fmt.Errorf("the good end of the %s (%s) does not build or boot", what, c.label(0))
	case oc == runner.Bad:
		return runner.BisectResult{}, fmt.Errorf("the good end of the %s (%s) already fails the scenario", what, c.label(0))
	}
	res, err := runner.Bisect(n, logged, nil)
	if err != nil {
		return res, err
	}
	c.print(stdout, res)
	return res, nil
}
