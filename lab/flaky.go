package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
)

// addFlakeFlags adds the flags of how runs retry flakes.
func addFlakeFlags(cmd *cobra.Command, o *campaign.Flakes) {
	cmd.Flags().IntVar(&o.KselftestRetries, "kselftest-retries", runner.DefaultKselftestRetries, "run a failed kselftest again, in the same guest, up to N times (known-flaky tests may get more; 0: never); a pass on retry is reported as flaky")
	cmd.Flags().BoolVar(&o.RetryTiming, "retry-timing", true, "run a scenario that failed only on timing-only assertions (rate, latency, no-stall, minimums over a window) once more on the same kernel; off with --repeat > 1 and --until-fail unless set")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "count flakes (a kselftest or run that passed on retry) as failures")
}

// checkFlakes validates the options; measuring (repeat, until-fail) turns
// the timing retry off unless it was asked for: each run is one sample.
func checkFlakes(cmd *cobra.Command, o *campaign.Flakes, measuring bool) error {
	if o.KselftestRetries < 0 || o.KselftestRetries > 10 {
		return fmt.Errorf("bad --kselftest-retries %d: want 0-10", o.KselftestRetries)
	}
	if measuring && !cmd.Flags().Changed("retry-timing") {
		o.RetryTiming = false
	}
	return nil
}

// printFlaky writes what was flaky in r and the other run folder of a retried run.
func printFlaky(w io.Writer, r *results.Result) {
	for _, l := range r.FlakyLines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if r.RetryOf != nil {
		fmt.Fprintf(w, "  retry of: %s\n", r.RetryOf.Dir)
	}
	if r.RetriedIn != "" {
		fmt.Fprintf(w, "  retried in: %s\n", r.RetriedIn)
	}
}

// runDir is the folder of the run that stands for the job: its retry's, if
// retried and the retry decided.
func runDir(j runner.Job, r *results.Result) string {
	if r.RetryOf != nil {
		return runner.RetryDir(j.Cfg.OutDir)
	}
	return j.Cfg.OutDir
}
