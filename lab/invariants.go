package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/results/model"
)

func newResultsInvariantsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "invariants RUN_FOLDER...",
		Short: "Judge recorded runs against the model's invariants again (every rule, none turned off), with the settle times seen",
		Long: `Replays each run's knobs (result.json) over its napi_polls snapshots (samples.jsonl) and prints, per
invariant the run exercised: the windows judged, those broken past the rule's grace, and the lags
(seconds from a change to the end of a window where the old context still polled) that the graces
are chosen from. busy-poll-reaches judges phases (a device between two changes) and its lag is the
time from the change to the end of the first window the receiver busy polled in. A run whose scenario turned a rule off is judged by it here too.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return judgeRuns(cmd.OutOrStdout(), args)
		},
	}
}

func judgeRuns(w io.Writer, dirs []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tKERNEL\tINVARIANT\tJUDGED\tBROKEN\tSETTLING\tMAX LAG\tGRACE")
	var bad, accounts []string
	for _, dir := range dirs {
		r, samples, err := results.LoadRun(dir)
		if err != nil {
			bad = append(bad, err.Error()) // a run still going has no result.json yet: judge the others
			continue
		}
		for _, o := range model.Check(model.Record{Kernel: model.KernelOf(r.Kernel.Release), Knobs: r.Knobs,
			Snaps: model.Reads(samples), Loads: r.Loads, Totals: model.TotalsOf(samples)}, model.Rules) {
			lag := "-"
			if len(o.Lags) > 0 {
				lag = fmt.Sprintf("%.2fs", slices.Max(o.Lags))
			}
			judged := fmt.Sprintf("%d %s", o.Judged, o.Unit())
			if o.Phases > 0 {
				judged = fmt.Sprintf("%d phases", o.Phases) // broken counts phases too
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%.2fs\n", dir, kernelName(r.Kernel), o.Rule.Name,
				judged, len(o.Broken), o.Settling, lag, o.Rule.Grace)
			// Conservation's accounts, judged or broken: where the drops were counted.
			for _, t := range o.Tallies {
				accounts = append(accounts, dir+": "+t.Describe())
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(accounts) > 0 {
		fmt.Fprintln(w, "\nudp-conserved, each namespace's account:")
		for _, a := range accounts {
			fmt.Fprintln(w, "  "+a)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d folders not judged: %s", len(bad), len(dirs), strings.Join(bad, "; "))
	}
	return nil
}

// kernelName is a run's kernel as the report names it: a flavoured
// build's spec name already ends in its flavour.
func kernelName(k results.Kernel) string {
	if k.Flavour == "" || strings.HasSuffix(k.Spec, "."+k.Flavour) {
		return k.Spec
	}
	return k.Spec + "." + k.Flavour
}
