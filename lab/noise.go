package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"napilab/internal/safefs"
	"napilab/results"
	"napilab/results/stats"
	"napilab/scenarios"
)

func newResultsNoiseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "noise PERF_FOLDER...",
		Short: "Pool each budgeted figure's noise over rounds of perf checks, and the runs its budget needs at that noise",
		Long: `Reads the perf.json of each perf folder (or of every perf folder inside a folder given, such as
lab run's -o) and prints, per scenario, mode, kernels and budgeted figure: each round's CV as the budget
check pooled it from both sides (IQR/1.349 over the median), their root mean square, and the runs per
side the budget as run needs at that noise (at 80% power). Measure noise over rounds first, then write
budgets that max_repeat runs decide.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return poolNoise(cmd.OutOrStdout(), args)
		},
	}
}

func poolNoise(w io.Writer, args []string) error {
	var rounds []stats.Round
	for _, arg := range args {
		files := []string{filepath.Join(arg, "perf.json")}
		if _, err := os.Stat(files[0]); err != nil {
			files, _ = filepath.Glob(filepath.Join(arg, "*", "perf.json"))
		}
		if len(files) == 0 {
			return fmt.Errorf("%s: no perf.json in it or in the folders inside it", arg)
		}
		for _, f := range files {
			r, err := readRound(filepath.Dir(f))
			if err != nil {
				return err
			}
			rounds = append(rounds, r)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMODE\tKERNELS\tFIGURE\tROUNDS\tRUNS\tCV\tEACH ROUND\tBUDGET\tNEEDS")
	for _, n := range stats.PoolRounds(rounds) {
		var each []string
		for _, cv := range n.CVs {
			each = append(each, pct(cv))
		}
		needs := "-" // a budget in the figure's units has no ratio to need runs for
		if tol := max(n.Budget.MaxDrop, n.Budget.MaxRise); n.Budget.MaxAbove == 0 && tol > 0 {
			needs = fmt.Sprint(stats.RunsNeeded(n.Pooled, tol, n.Alpha, scenarios.PerfPower))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s vs %s\t%s\t%d\t%d-%d\t%s\t%s\t%s\t%s\n", n.Scenario, cmp.Or(n.Mode, "-"), n.Candidate, n.Baseline,
			n.Budget.Metric, len(n.CVs), slices.Min(n.Runs), slices.Max(n.Runs), pct(n.Pooled), strings.Join(each, " "), n.Budget, needs)
	}
	return tw.Flush()
}

// readRound reads a perf folder's check and the scenario of its runs.
func readRound(dir string) (stats.Round, error) {
	b, err := safefs.ReadRegular(filepath.Join(dir, "perf.json"), results.MaxResultSize)
	if err != nil {
		return stats.Round{}, err
	}
	c, err := stats.ReadPerfCheck(bytes.NewReader(b))
	if err != nil {
		return stats.Round{}, fmt.Errorf("%s: %w", dir, err)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "a-*", results.ResultFile))
	if len(runs) == 0 {
		return stats.Round{}, fmt.Errorf("%s: no run of side A (a-N/%s) to name the scenario", dir, results.ResultFile)
	}
	r, err := results.Read(runs[0])
	if err != nil {
		return stats.Round{}, err
	}
	return stats.Round{Scenario: r.Scenario, Check: c}, nil
}
