package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/runner"
)

// flakeOptions say how lab retries failures that may be the host's timing.
type flakeOptions struct {
	// kselftestRetries is how many times a failed kselftest runs again in
	// the same guest (known-flaky tests may get more).
	kselftestRetries int
	// retryTiming runs a run that FAILed on timing-only assertions alone
	// once more on the same kernel.
	retryTiming bool
	// strict counts flakes (passed on retry) as failures.
	strict bool
}

func addFlakeFlags(cmd *cobra.Command, o *flakeOptions) {
	cmd.Flags().IntVar(&o.kselftestRetries, "kselftest-retries", runner.DefaultKselftestRetries, "run a failed kselftest again, in the same guest, up to N times (known-flaky tests may get more; 0: never); a pass on retry is reported as flaky")
	cmd.Flags().BoolVar(&o.retryTiming, "retry-timing", true, "run a scenario that failed only on timing-only assertions (rate, latency, no-stall, minimums over a window) once more on the same kernel; off with --repeat > 1 and --until-fail unless set")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "count flakes (a kselftest or run that passed on retry) as failures")
}

// check validates the options; measuring (repeat, until-fail) turns the
// timing retry off unless it was asked for: each run is one sample.
func (o *flakeOptions) check(cmd *cobra.Command, measuring bool) error {
	if o.kselftestRetries < 0 || o.kselftestRetries > 10 {
		return fmt.Errorf("bad --kselftest-retries %d: want 0-10", o.kselftestRetries)
	}
	if measuring && !cmd.Flags().Changed("retry-timing") {
		o.retryTiming = false
	}
	return nil
}

// apply sets the job's retry and strictness.
func (o *flakeOptions) apply(j *runner.Job) {
	j.Cfg.KselftestRetries, j.Cfg.Strict, j.RetryTiming = o.kselftestRetries, o.strict, o.retryTiming
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
