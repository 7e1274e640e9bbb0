package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"napilab/images"
	"napilab/kernels"
	"napilab/patches"
	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
	"napilab/scenarios"
)

type bisectOptions struct {
	metric    string // perf bisect: the budgeted metric
	baselines string
	series    string
	kernel    string
	params    []string
	runs      int
	out       string
	accel     string
	flavour   string
	tree      treeOptions // --tree: bisect commits of its repository
	good, bad string      // with --tree: the range
}

func newBisectCmd(g *globalOptions) *cobra.Command {
	o := &bisectOptions{}
	cmd := &cobra.Command{
		Use:   "bisect SCENARIO --series SERIES --kernel BASE | bisect SCENARIO --tree DIR --good A --bad B",
		Short: "Find the first patch of a series, or the first commit, that makes a scenario fail",
		Long: `Builds BASE plus the first k patches of SERIES (each a variant that recompiles only what the
patches touch) and runs the scenario up to --runs times per candidate, stopping at the first FAIL:
a candidate with no FAIL in --runs runs counts as good. A race that fails one run in f is missed by
a good verdict with probability (1-1/f)^runs: with the default 5 runs, 33% for a 1-in-5 race and 3%
for a 1-in-2 one; raise --runs for rarer races (14 runs bring a 1-in-5 race under 5%).
The ends are checked first: BASE must pass and the whole series must fail.
With --tree DIR --good A --bad B the candidates are the commits of A..B in the git repository DIR
along B's first parents (git rev-list --first-parent: a merge is tested as a whole, the answer may be
a merge commit), each exported into the cache and built in one work dir, so a step recompiles only
what changed since the last; the config is taken as for lab kernel build --tree.
A candidate whose kernel does not build, or does not boot (a FAIL before the guest agent was up),
is skipped as with git bisect skip: the answer may then be a range, and the skipped candidates
are named. A commit older than the scenario's kernel.min is skipped without building.
With --metric M the scenario must be a perf scenario with a budget on M: BASE runs perf.repeat times
once, each candidate as often, and a candidate is bad when M moved past its budget beyond the noise
(the lab run rule); a candidate the noise leaves undecided (INCONCLUSIVE) is skipped.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return bisect(cmd, g, o, args[0])
		},
	}
	cmd.Flags().StringVar(&o.series, "series", "", "the series: quilt folder, format-patch folder or files, or an mbox")
	cmd.Flags().StringVarP(&o.kernel, "kernel", "k", "kernels/stock-6.1.yaml", "the base kernel spec")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value")
	cmd.Flags().IntVar(&o.runs, "runs", 5, "runs per candidate (stops at the first FAIL)")
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the bisect folder")
	cmd.Flags().StringVar(&o.accel, "accel", "", "kvm or tcg")
	cmd.Flags().StringVar(&o.flavour, "flavour", "", flavourUsage)
	cmd.Flags().StringVar(&o.metric, "metric", "", "perf bisect: the budgeted metric that regressed")
	addTreeFlags(cmd, &o.tree)
	cmd.Flags().StringVar(&o.good, "good", "", "with --tree: a commit that passes")
	cmd.Flags().StringVar(&o.bad, "bad", "", "with --tree: a later commit that fails")
	return cmd
}

// bisector holds what every step of a bisect shares.
type bisector struct {
	g        *globalOptions
	o        *bisectOptions
	s        *scenarios.Scenario
	params   map[string]string
	fl       kernels.Flavour
	img      *images.Image
	out      string // the bisect folder
	specPath string // the spec recorded in replay.json
	stderr   io.Writer
	runsUsed int
	start    time.Time
}

func bisect(cmd *cobra.Command, g *globalOptions, o *bisectOptions, file string) error {
	tree, err := o.tree.set()
	switch {
	case err != nil:
		return err
	case tree && o.series != "":
		return fmt.Errorf("--series and --tree exclude each other")
	case !tree && o.series == "":
		return fmt.Errorf("name what to bisect: --series SERIES, or --tree DIR --good A --bad B")
	case tree && (o.good == "" || o.bad == ""):
		return fmt.Errorf("--tree needs --good and --bad")
	case !tree && (o.good != "" || o.bad != ""):
		return fmt.Errorf("--good and --bad need --tree")
	case tree && o.tree.rev != "":
		return fmt.Errorf("--rev does not go with bisect: --good and --bad give the range")
	}
	b, err := newBisector(cmd, g, o, file)
	if err != nil {
		return err
	}
	if tree {
		return bisectCommits(cmd, b)
	}
	return bisectSeries(cmd, b)
}

// newBisector loads the scenario for the flavour and builds the image.
func newBisector(cmd *cobra.Command, g *globalOptions, o *bisectOptions, file string) (*bisector, error) {
	b := &bisector{g: g, o: o, stderr: cmd.ErrOrStderr(), start: time.Now()}
	var err error
	if b.params, err = parseParams(o.params); err != nil {
		return nil, err
	}
	if b.fl, err = kernels.ParseFlavour(o.flavour); err != nil {
		return nil, err
	}
	if b.s, err = scenarios.Open(file, b.params); err != nil {
		return nil, err
	}
	if b.s.Machine.Flavour == scenarios.FlavourDebug {
		b.fl.Debug = true
	}
	if b.fl.Debug {
		if b.s, b.params, err = b.s.ForFlavour(scenarios.FlavourDebug, b.params); err != nil {
			return nil, err
		}
	}
	if b.s.NeedsDebian() {
		// Each bisect step would rebuild a kselftest flavour from scratch.
		return nil, fmt.Errorf("%s needs the Debian image (kselftest steps): lab bisect runs agent-only scenarios; bisect with lab run -k on kselftest-flavoured specs by hand", b.s.Name)
	}
	b.img, err = images.Build(cmd.Context(), images.Options{CacheDir: g.cache()})
	return b, err
}

// config is the run configuration of the scenario on a built kernel.
func (b *bisector) config(spec *kernels.Spec, a *kernels.Artifact) runner.Config {
	cfg := campaign.GuestConfig(b.specPath, spec, a, b.img)
	cfg.Scenario, cfg.Accel, cfg.Params = b.s, b.o.accel, b.params
	return cfg
}

// build builds spec; nil, nil when it does not build (a skip).
func (b *bisector) build(ctx context.Context, label string, spec *kernels.Spec) (*kernels.Artifact, error) {
	a, err := kernels.Build(ctx, spec.Flavoured(b.fl), kernels.Options{CacheDir: b.g.cache()})
	var be *kernels.BuildError
	if errors.As(err, &be) {
		fmt.Fprintf(b.stderr, "%s: the kernel does not build, skipped: %v\n", label, be)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("build of %s: %w", label, err)
	}
	how := fmt.Sprintf("built: %d objects in %.0fs", a.Info.Objects, a.Info.Seconds)
	if a.Cached {
		how = "cached"
	}
	fmt.Fprintf(b.stderr, "%s: kernel %s (%s)\n", label, spec.Flavoured(b.fl).Name, how)
	return a, nil
}

// runs runs the scenario up to --runs times on a built kernel (spec as
// flavoured): Bad at the first FAIL, Skip when the kernel does not boot,
// Good when every run passed.
func (b *bisector) runs(ctx context.Context, label, dir string, spec *kernels.Spec, a *kernels.Artifact) (runner.Outcome, error) {
	for i := 1; i <= b.o.runs; i++ {
		b.runsUsed++
		cfg := b.config(spec, a)
		cfg.OutDir = filepath.Join(b.out, fmt.Sprintf("%s-run%d", dir, i))
		r := runner.Run(ctx, cfg)
		fmt.Fprintf(b.stderr, "  run %d: %s %s\n", i, r.Verdict, r.Title())
		switch {
		case ctx.Err() != nil:
			return runner.Good, ctx.Err()
		case r.Verdict == results.Error:
			return runner.Good, fmt.Errorf("lab error with %s: %v", label, r.Reasons)
		case r.Verdict == results.Fail && !runner.Booted(r):
			fmt.Fprintf(b.stderr, "%s: the kernel does not boot, skipped\n", label)
			return runner.Skip, nil
		case r.Verdict == results.Fail:
			return runner.Bad, nil
		}
	}
	return runner.Good, nil
}

// search checks the ends (the bad one first: it is the likelier to be
// wrong), bisects between them, logging each step, and prints the answer.
// what names the candidates in errors ("series", "range").
func search(c campaign.Candidates, what string, runs int, test func(k int) (runner.Outcome, error), stdout, log io.Writer) (runner.BisectResult, error) {
	logged := func(k int) (runner.Outcome, error) {
		oc, err := test(k)
		if err == nil {
			fmt.Fprintf(log, "%s: %s\n", c.Label(k), oc)
		}
		return oc, err
	}
	n := c.Count()
	switch oc, err := logged(n); {
	case err != nil:
		return runner.BisectResult{}, err
	case oc == runner.Skip:
		return runner.BisectResult{}, &exitCodeError{code: exitError, err: fmt.Errorf("the bad end of the %s (%s) does not build or boot: nothing to bisect", what, c.Label(n))}
	case oc == runner.Good:
		return runner.BisectResult{}, &exitCodeError{code: exitError, err: fmt.Errorf("the bad end of the %s (%s) passed %d runs: nothing to bisect", what, c.Label(n), runs)}
	}
	switch oc, err := logged(0); {
	case err != nil:
		return runner.BisectResult{}, err
	case oc == runner.Skip:
		return runner.BisectResult{}, &exitCodeError{code: exitError, err: fmt.Errorf("the good end of the %s (%s) does not build or boot", what, c.Label(0))}
	case oc == runner.Bad:
		return runner.BisectResult{}, &exitCodeError{code: exitError, err: fmt.Errorf("the good end of the %s (%s) already fails the scenario", what, c.Label(0))}
	}
	res, err := runner.Bisect(n, logged, nil)
	if err != nil {
		return res, err
	}
	c.Print(stdout, res)
	return res, nil
}

// seriesCandidates are the prefixes of a series.
type seriesCandidates struct{ series *patches.Series }

func (c seriesCandidates) Count() int         { return len(c.series.Patches) }
func (c seriesCandidates) Label(k int) string { return fmt.Sprintf("patches 1..%d", k) }
func (c seriesCandidates) Print(w io.Writer, res runner.BisectResult) {
	printBisect(w, c.series, res)
}

// bisectSeries bisects the prefixes of --series on --kernel.
func bisectSeries(cmd *cobra.Command, b *bisector) error {
	ctx, o := cmd.Context(), b.o
	base, err := kernels.LoadSpec(o.kernel)
	if err != nil {
		return err
	}
	series, err := patches.Load(o.series)
	if err != nil {
		return err
	}
	b.specPath = o.kernel
	// One file per patch, so a prefix is a list of files whatever the format.
	dir := filepath.Join(b.g.cache(), "bisect", series.Hash()[:12])
	var files []string
	for i, p := range series.Patches {
		f := filepath.Join(dir, fmt.Sprintf("%04d.patch", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, p.Diff, 0o644); err != nil {
			return err
		}
		files = append(files, f)
	}
	if b.out, err = results.NewRunDir(o.out, "bisect-"+b.s.Name+"-"+base.Name); err != nil {
		return err
	}
	c := seriesCandidates{series}
	// build builds base plus patches 1..k; nil, nil when it does not build (a skip).
	build := func(k int) (*kernels.Spec, *kernels.Artifact, error) {
		v := *base
		v.Name = fmt.Sprintf("%s-bisect-%s-%d", base.Name, series.Hash()[:8], k)
		v.Patches = append(append([]string{}, base.Patches...), files[:k]...)
		v.Extends = base.Path
		spec := &v
		if k == 0 {
			spec = base
		}
		a, err := b.build(ctx, c.Label(k), spec)
		if a == nil {
			return nil, nil, err
		}
		return spec.Flavoured(b.fl), a, nil
	}
	if o.metric != "" {
		return campaign.PerfBisect(ctx, b.s, o.metric, c, build, func(k int) string { return filepath.Join(b.out, fmt.Sprintf("k%d", k)) }, b.config, b.start, cmd.OutOrStdout(), b.stderr)
	}
	test := func(k int) (runner.Outcome, error) {
		spec, a, err := build(k)
		if err != nil || spec == nil {
			return runner.Skip, err
		}
		return b.runs(ctx, c.Label(k), fmt.Sprintf("k%d", k), spec, a)
	}
	if _, err := search(c, "series", o.runs, test, cmd.OutOrStdout(), b.stderr); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "  (%d runs, %.0fs; runs in %s)\n", b.runsUsed, time.Since(b.start).Seconds(), b.out)
	return nil
}

// printBisect says which patch is the first bad one, or which patches may
// be when skipped prefixes (kernels that did not build or boot) hide it.
func printBisect(w io.Writer, series *patches.Series, res runner.BisectResult) {
	n := len(series.Patches)
	if res.First == res.Last {
		p := series.Patches[res.First-1]
		fmt.Fprintf(w, "first bad patch: %d/%d %q by %s\n", res.First, n, p.Subject, p.Author)
	} else {
		fmt.Fprintf(w, "first bad patch: one of %d..%d of %d (the prefixes between could not be tested):\n", res.First, res.Last, n)
		for k := res.First; k <= res.Last; k++ {
			p := series.Patches[k-1]
			fmt.Fprintf(w, "  %d/%d %q by %s\n", k, n, p.Subject, p.Author)
		}
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(w, "skipped (did not build or boot): patches 1..%s\n", joinInts(res.Skipped))
	}
}

func joinInts(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ", 1..")
}
