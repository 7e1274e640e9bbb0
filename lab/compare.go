package main

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/results/report"
	"napilab/runner"
	"napilab/runner/campaign"
)

type compareOptions struct {
	kernels  []string
	params   []string
	aParams  []string
	bParams  []string
	repeat   int
	out      string
	accel    string
	alpha    float64
	seed     int64
	metrics  string
	flavour  string // both sides
	bFlavour string // side B only (e.g. debug: what the sanitizers cost)
}

func newCompareCmd(g *globalOptions) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare SCENARIO --kernels A,B [--repeat N]",
		Short: "Run a scenario on two kernels (or two parameter sets) interleaved and compare every figure",
		Long: `Runs the scenario on A and B in the order A B A B … (--repeat times each), then prints per figure
the median and quartiles of each side, the ratio B/A with a bootstrap 95% interval, and a two-sided
Mann-Whitney U p-value; a difference counts as beyond the noise when both agree. With one kernel,
--a-param/--b-param make the two sides differ by scenario parameters instead (e.g. threaded=0 vs 1).
The table is also written as compare.json and compare.md in the comparison folder.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return compare(cmd, g, o, args[0])
		},
	}
	cmd.Flags().StringSliceVar(&o.kernels, "kernels", []string{"kernels/stock-6.1.yaml"}, "kernel specs A,B (B defaults to A)")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "parameter for both sides name=value")
	cmd.Flags().StringArrayVar(&o.aParams, "a-param", nil, "parameter for side A only")
	cmd.Flags().StringArrayVar(&o.bParams, "b-param", nil, "parameter for side B only")
	cmd.Flags().IntVarP(&o.repeat, "repeat", "n", 5, "runs per side")
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the comparison folder")
	cmd.Flags().StringVar(&o.accel, "accel", "", "kvm or tcg")
	cmd.Flags().Float64Var(&o.alpha, "alpha", 0.05, "significance level of the rank test")
	cmd.Flags().Int64Var(&o.seed, "seed", 1, "bootstrap seed")
	cmd.Flags().StringVar(&o.flavour, "flavour", "", flavourUsage+" (both sides)")
	cmd.Flags().StringVar(&o.bFlavour, "b-flavour", "", "flavour of side B only, e.g. debug to measure what the sanitizers cost")
	cmd.Flags().StringVar(&o.metrics, "metrics", "", "print only figures matching this regexp (the JSON and markdown keep all)")
	return cmd
}

// side resolves one arm (campaign.Guests.Arm) from the parameters both
// sides share and its own.
func side(cmd *cobra.Command, gs *campaign.Guests, kernel string, file string, common, own []string, accel, tag string) (runner.Arm, error) {
	params, err := parseParams(append(append([]string{}, common...), own...))
	if err != nil {
		return runner.Arm{}, err
	}
	return gs.Arm(cmd.Context(), kernel, file, params, own, accel, tag)
}

func compare(cmd *cobra.Command, g *globalOptions, o *compareOptions, file string) error {
	if len(o.kernels) == 1 {
		o.kernels = append(o.kernels, o.kernels[0])
	}
	if len(o.kernels) != 2 || o.repeat < 1 {
		return fmt.Errorf("want --kernels A,B and --repeat >= 1")
	}
	if o.kernels[0] == o.kernels[1] && len(o.aParams)+len(o.bParams) == 0 && o.bFlavour == "" {
		return fmt.Errorf("both sides are the same: give two kernels, --a-param/--b-param or --b-flavour")
	}
	fa, err := kernels.ParseFlavour(o.flavour)
	if err != nil {
		return err
	}
	fb, err := kernels.ParseFlavour(o.bFlavour)
	if err != nil {
		return err
	}
	var re *regexp.Regexp // checked before any run
	if o.metrics != "" {
		if re, err = regexp.Compile(o.metrics); err != nil {
			return fmt.Errorf("bad --metrics: %w", err)
		}
	}
	var arms [2]runner.Arm
	for i, tag := range []string{"a", "b"} {
		gs := newGuests(g, 0, cmd.ErrOrStderr())
		gs.NoCover = true // probes would be in the figures
		gs.Flavour = fa
		own := o.aParams
		if tag == "b" {
			own, gs.Flavour = o.bParams, fa.Join(fb)
		}
		arm, err := side(cmd, gs, o.kernels[i], file, o.params, own, o.accel, tag)
		if err != nil {
			return err
		}
		arms[i] = arm
	}
	stderr := cmd.ErrOrStderr()
	c, dir, err := campaign.Comparison{Arms: arms, Repeat: o.repeat, Out: o.out, Alpha: o.alpha, Seed: o.seed,
		Each: func(a runner.Arm, i int, r *results.Result) {
			fmt.Fprintf(stderr, "%s-%d %-30s %s (%.1fs)\n", a.Tag, i, a.Label, r.Verdict, r.Timings.Total)
		}}.Compare(cmd.Context())
	if err != nil {
		return err // exit 2, as every lab failure
	}
	if re != nil {
		shown := *c
		shown.Rows = nil
		for _, r := range c.Rows {
			if re.MatchString(r.Metric) {
				shown.Rows = append(shown.Rows, r)
			}
		}
		c = &shown
	}
	c.WriteText(cmd.OutOrStdout())
	if err := report.WriteComparison(dir); err != nil {
		fmt.Fprintf(stderr, "note: compare.html not written: %v\n", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "comparison folder: %s (compare.html)\n", dir)
	return nil
}
