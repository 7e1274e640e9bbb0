package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/runner/campaign"
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
	b := &campaign.Bisector{CacheDir: g.cache(), Accel: o.accel, Runs: o.runs, Metric: o.metric, Log: cmd.ErrOrStderr()}
	if b.Params, err = parseParams(o.params); err != nil {
		return err
	}
	if b.Flavour, err = kernels.ParseFlavour(o.flavour); err != nil {
		return err
	}
	if err := b.Open(cmd.Context(), file); err != nil {
		return err
	}
	if !tree {
		return b.Series(cmd.Context(), o.kernel, o.series, o.out, cmd.OutOrStdout())
	}
	// Every step builds the --tree spec at its commit.
	specPath := func(rev string) (string, error) {
		t := o.tree
		t.rev = rev
		if t.name == "" {
			t.name = kernels.TreeSpecName(o.tree.dir, "") + "-bisect"
		}
		return t.specPath(cmd.Context(), g)
	}
	return b.Commits(cmd.Context(), o.tree.dir, o.good, o.bad, o.out, specPath, cmd.OutOrStdout())
}
