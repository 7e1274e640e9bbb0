package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/runner/campaign"
)

// defaultBaselines is where stored baselines live unless --baselines says
// otherwise: a folder of JSON files meant to be committed.
const defaultBaselines = "results/baselines"

type baselineOptions struct {
	dir     string
	kernel  string
	repeat  int
	name    string
	params  []string
	out     string
	accel   string
	flavour string
}

func newBaselineCmd(g *globalOptions) *cobra.Command {
	o := &baselineOptions{}
	cmd := &cobra.Command{Use: "baseline", Short: "Record, list and remove stored performance baselines"}
	cmd.PersistentFlags().StringVar(&o.dir, "baselines", defaultBaselines, "folder of stored baselines (commit it to share them)")
	record := &cobra.Command{
		Use:   "record SCENARIO --kernel SPEC [--repeat N]",
		Short: "Run a scenario N times on a kernel and store every figure as a baseline",
		Long: `Runs the scenario --repeat times on the kernel and stores each run's figures, with the kernel's
content key, the scenario's measured content (the resolved scenario less its perf block) and this host's
class (CPU model, cores, QEMU version, accelerator), as <baselines>/<name>.json. lab run
--against-baseline then takes side A of a perf scenario from it instead of running the baseline kernel,
but only when all three still match; otherwise it says why and runs A. Every run must PASS.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return recordBaseline(cmd, g, o, args[0]) },
	}
	record.Flags().StringVarP(&o.kernel, "kernel", "k", "kernels/stock-6.1.yaml", "kernel spec")
	record.Flags().IntVarP(&o.repeat, "repeat", "n", 10, "runs")
	record.Flags().StringVar(&o.name, "name", "", "baseline name (default <scenario>@<kernel>)")
	record.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value")
	record.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the runs' folder")
	record.Flags().StringVar(&o.accel, "accel", "", "kvm or tcg")
	record.Flags().StringVar(&o.flavour, "flavour", "", flavourUsage)
	list := &cobra.Command{
		Use:   "list",
		Short: "List stored baselines and whether they fit this host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bs, err := stats.LoadBaselines(o.dir)
			if err != nil {
				return err
			}
			host, herr := runner.HostClass(cmd.Context(), "")
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCENARIO\tKERNEL\tKEY\tRUNS\tRECORDED\tHOST")
			for _, b := range bs {
				fit := "this host class"
				if herr != nil {
					fit = "unknown: " + herr.Error()
				} else if m := host.Mismatch(b.Host); m != "" {
					fit = "other: " + m
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.12s\t%d\t%s\t%s\n", b.Name, b.Scenario, b.Kernel.Spec, b.Kernel.Key,
					len(campaign.RunsOf(b)), b.Created.Format("2006-01-02 15:04"), fit)
			}
			tw.Flush()
			if len(bs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "(no baselines in %s)\n", o.dir)
			}
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove stored baselines",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if err := stats.RemoveBaseline(o.dir, n); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", n)
			}
			return nil
		},
	}
	var metrics string
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a stored baseline's run-to-run noise per figure (median, CV), to choose budgets",
		Long: `Prints, for every figure of the baseline's runs, the median, the range, the coefficient of
variation (sd/mean) and the robust CV (IQR/1.349/median, what the budget check uses), and the tolerance
its runs could resolve at 80% power (the smallest budget RunsNeeded allows with this many runs).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showBaseline(cmd.OutOrStdout(), o.dir, args[0], metrics)
		},
	}
	show.Flags().StringVar(&metrics, "metrics", "", "only figures matching this regexp")
	cmd.AddCommand(record, list, show, rm)
	return cmd
}

func showBaseline(w io.Writer, dir, name, metrics string) error {
	re, err := regexp.Compile(metrics)
	if err != nil {
		return fmt.Errorf("bad --metrics: %w", err)
	}
	bs, err := stats.LoadBaselines(dir)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(bs, func(b *stats.Baseline) bool { return b.Name == name })
	if i < 0 {
		return fmt.Errorf("no baseline %q in %s (lab baseline list)", name, dir)
	}
	b := bs[i]
	fmt.Fprintf(w, "%s: %s on %s (%.12s), %d runs, host %s/%d cores/QEMU %s/%s, recorded %s\n\n", b.Name, b.Scenario,
		b.Kernel.Spec, b.Kernel.Key, len(campaign.RunsOf(b)), b.Host.CPU, b.Host.Cores, b.Host.QEMU, b.Host.Accel, b.Created.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tN\tMEDIAN\tMIN..MAX\tCV\tROBUST CV\tSMALLEST BUDGET")
	n := len(campaign.RunsOf(b))
	for _, r := range stats.Noise(b.Samples) {
		if !re.MatchString(r.Metric) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4g..%.4g\t%s\t%s\t%s\n", r.Metric, r.Summary.N, r.Summary.Median, r.Summary.Min,
			r.Summary.Max, pct(r.CV), pct(r.RobustCV), pct(campaign.SmallestBudget(math.Max(r.CV, r.RobustCV), n)))
	}
	return tw.Flush()
}

func pct(f float64) string {
	switch {
	case math.IsNaN(f):
		return "n/a"
	case math.IsInf(f, 1):
		return "none"
	}
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

func recordBaseline(cmd *cobra.Command, g *globalOptions, o *baselineOptions, file string) error {
	if o.repeat < 1 {
		return fmt.Errorf("--repeat must be at least 1")
	}
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	host, err := runner.HostClass(ctx, o.accel)
	if err != nil {
		return err
	}
	gs := newGuests(g, 0, stderr)
	gs.NoCover = true // probes would be in the figures
	defer gs.Release()
	if gs.Flavour, err = kernels.ParseFlavour(o.flavour); err != nil {
		return err
	}
	arm, err := side(cmd, gs, o.kernel, file, o.params, nil, o.accel, "r")
	if err != nil {
		return err
	}
	rec := &campaign.Recorder{Name: o.name, Repeat: o.repeat, Out: o.out, Dir: o.dir, Host: host, Log: stderr}
	b, path, dir, err := rec.Record(ctx, arm)
	if err != nil {
		return err
	}
	k := b.Kernel
	fmt.Fprintf(cmd.OutOrStdout(), "baseline %s: %d runs of %s on %s (%.12s), host %s/%d cores/QEMU %s/%s\n  %s (runs in %s)\n",
		b.Name, o.repeat, b.Scenario, k.Spec, k.Key, host.CPU, host.Cores, host.QEMU, host.Accel, path, dir)
	return nil
}
