package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	series  string
	kernel  string
	params  []string
	runs    int
	out     string
	accel   string
	flavour string
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
The ends are checked first: BASE must pass and the whole series must fail.`,
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
	bad := func(k int) (bool, error) {
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
		if err != nil {
			return false, fmt.Errorf("build with patches 1..%d: %w", k, err)
		}
		how := fmt.Sprintf("built: %d objects in %.0fs", a.Info.Objects, a.Info.Seconds)
		if a.Cached {
			how = "cached"
		}
		fmt.Fprintf(stderr, "patches 1..%d: kernel %s (%s)\n", k, spec.Name, how)
		for i := 1; i <= o.runs; i++ {
			runsUsed++
			cfg := guestConfig(o.kernel, spec, a, img)
			cfg.Scenario, cfg.Accel, cfg.Params = s, o.accel, params
			cfg.OutDir = filepath.Join(out, fmt.Sprintf("k%d-run%d", k, i))
			r := runner.Run(ctx, cfg)
			fmt.Fprintf(stderr, "  run %d: %s %s\n", i, r.Verdict, r.Title())
			switch {
			case ctx.Err() != nil:
				return false, ctx.Err()
			case r.Verdict == results.Error:
				return false, fmt.Errorf("lab error with patches 1..%d: %v", k, r.Reasons)
			case r.Verdict == results.Fail:
				return true, nil
			}
		}
		return false, nil
	}
	n := len(series.Patches)
	if b, err := bad(n); err != nil {
		return err
	} else if !b {
		return &exitCodeError{code: exitError, err: fmt.Errorf("the whole series passed %d runs: nothing to bisect", o.runs)}
	}
	if b, err := bad(0); err != nil {
		return err
	} else if b {
		return &exitCodeError{code: exitError, err: fmt.Errorf("the base kernel %s already fails the scenario", base.Name)}
	}
	first, err := runner.Bisect(n, bad, func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) })
	if err != nil {
		return err
	}
	p := series.Patches[first-1]
	fmt.Fprintf(cmd.OutOrStdout(), "first bad patch: %d/%d %q by %s\n  (%d runs, %.0fs; runs in %s)\n",
		first, n, p.Subject, p.Author, runsUsed, time.Since(start).Seconds(), out)
	return nil
}
