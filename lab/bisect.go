package main

import (
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
}

func newBisectCmd(g *globalOptions) *cobra.Command {
	o := &bisectOptions{}
	cmd := &cobra.Command{
		Use:   "bisect SCENARIO --series SERIES --kernel BASE",
		Short: "Find the first patch of a series whose prefix makes a scenario fail",
		Long: `Builds BASE plus the first k patches of SERIES (each a variant that recompiles only what the
patches touch) and runs the scenario up to --runs times per candidate, stopping at the first FAIL:
a candidate with no FAIL in --runs runs counts as good. A race that fails one run in f is missed by
a good verdict with probability (1-1/f)^runs: with the default 5 runs, 33% for a 1-in-5 race and 3%
for a 1-in-2 one; raise --runs for rarer races (14 runs bring a 1-in-5 race under 5%).
The ends are checked first: BASE must pass and the whole series must fail.
A candidate whose kernel does not build, or does not boot (a FAIL before the guest agent was up),
is skipped as with git bisect skip: the answer may then be a range of patches, and the skipped
candidates are named.
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
	cmd.MarkFlagRequired("series")
	return cmd
}

func bisect(cmd *cobra.Command, g *globalOptions, o *bisectOptions, file string) error {
	ctx := cmd.Context()
	start := time.Now()
	params, err := parseParams(o.params)
	if err != nil {
		return err
	}
	fl, err := kernels.ParseFlavour(o.flavour)
	if err != nil {
		return err
	}
	s, err := scenarios.Open(file, params)
	if err != nil {
		return err
	}
	if s.Machine.Flavour == scenarios.FlavourDebug {
		fl.Debug = true
	}
	if fl.Debug {
		if s, params, err = s.ForFlavour(scenarios.FlavourDebug, params); err != nil {
			return err
		}
	}
	if s.NeedsDebian() {
		// Each bisect step would rebuild a kselftest flavour from scratch.
		return fmt.Errorf("%s needs the Debian image (kselftest steps): lab bisect runs agent-only scenarios; bisect with lab run -k on kselftest-flavoured specs by hand", s.Name)
	}
	base, err := kernels.LoadSpec(o.kernel)
	if err != nil {
		return err
	}
	series, err := patches.Load(o.series)
	if err != nil {
		return err
	}
	// One file per patch, so a prefix is a list of files whatever the format.
	dir := filepath.Join(g.cache(), "bisect", series.Hash()[:12])
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
	img, err := images.Build(ctx, images.Options{CacheDir: g.cache()})
	if err != nil {
		return err
	}
	out, err := results.NewRunDir(o.out, "bisect-"+s.Name+"-"+base.Name)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	runsUsed := 0
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
		spec = spec.Flavoured(fl)
		a, err := kernels.Build(ctx, spec, kernels.Options{CacheDir: g.cache()})
		var be *kernels.BuildError
		if errors.As(err, &be) {
			fmt.Fprintf(stderr, "patches 1..%d: the kernel does not build, skipped: %v\n", k, be)
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("build with patches 1..%d: %w", k, err)
		}
		how := fmt.Sprintf("built: %d objects in %.0fs", a.Info.Objects, a.Info.Seconds)
		if a.Cached {
			how = "cached"
		}
		fmt.Fprintf(stderr, "patches 1..%d: kernel %s (%s)\n", k, spec.Name, how)
		return spec, a, nil
	}
	if o.metric != "" {
		return perfBisect(cmd, o, s, params, series, build, func(k int) string { return filepath.Join(out, fmt.Sprintf("k%d", k)) },
			func(spec *kernels.Spec, a *kernels.Artifact) runner.Config {
				cfg := guestConfig(o.kernel, spec, a, img)
				cfg.Scenario, cfg.Accel, cfg.Params = s, o.accel, params
				return cfg
			}, start)
	}
	test := func(k int) (runner.Outcome, error) {
		spec, a, err := build(k)
		if err != nil || spec == nil {
			return runner.Skip, err
		}
		for i := 1; i <= o.runs; i++ {
			runsUsed++
			cfg := guestConfig(o.kernel, spec, a, img)
			cfg.Scenario, cfg.Accel, cfg.Params = s, o.accel, params
			cfg.OutDir = filepath.Join(out, fmt.Sprintf("k%d-run%d", k, i))
			r := runner.Run(ctx, cfg)
			fmt.Fprintf(stderr, "  run %d: %s %s\n", i, r.Verdict, r.Title())
			switch {
			case ctx.Err() != nil:
				return runner.Good, ctx.Err()
			case r.Verdict == results.Error:
				return runner.Good, fmt.Errorf("lab error with patches 1..%d: %v", k, r.Reasons)
			case r.Verdict == results.Fail && !runner.Booted(r):
				fmt.Fprintf(stderr, "patches 1..%d: the kernel does not boot, skipped\n", k)
				return runner.Skip, nil
			case r.Verdict == results.Fail:
				return runner.Bad, nil
			}
		}
		return runner.Good, nil
	}
	n := len(series.Patches)
	switch oc, err := test(n); {
	case err != nil:
		return err
	case oc == runner.Skip:
		return &exitCodeError{code: exitError, err: fmt.Errorf("the whole series does not build or boot: nothing to bisect")}
	case oc == runner.Good:
		return &exitCodeError{code: exitError, err: fmt.Errorf("the whole series passed %d runs: nothing to bisect", o.runs)}
	}
	switch oc, err := test(0); {
	case err != nil:
		return err
	case oc == runner.Skip:
		return &exitCodeError{code: exitError, err: fmt.Errorf("the base kernel %s does not build or boot", base.Name)}
	case oc == runner.Bad:
		return &exitCodeError{code: exitError, err: fmt.Errorf("the base kernel %s already fails the scenario", base.Name)}
	}
	res, err := runner.Bisect(n, test, func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) })
	if err != nil {
		return err
	}
	printBisect(cmd.OutOrStdout(), series, res)
	fmt.Fprintf(cmd.OutOrStdout(), "  (%d runs, %.0fs; runs in %s)\n", runsUsed, time.Since(start).Seconds(), out)
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
