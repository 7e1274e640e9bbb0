package runner

import (
	"context"
	"fmt"
	"os"

	"napilab/results"
	"napilab/results/report"
)

// RetryDir is the run folder of dir's retry.
func RetryDir(dir string) string { return dir + "-retry" }

// runJob runs j with run (Run outside tests). A run that FAILed only on
// timing-only assertions (results.Result.TimingOnlyFailure) runs once more
// on the same kernel into RetryDir, when j.RetryTiming: a pass there is
// flaky, not a FAIL, unless j.Cfg.Strict. Both run folders stay, each
// result linking the other. The result returned stands for the job.
func runJob(ctx context.Context, j Job, run func(context.Context, Config) *results.Result) *results.Result {
	first := run(ctx, j.Cfg)
	if !j.RetryTiming || ctx.Err() != nil || !first.TimingOnlyFailure() {
		return first
	}
	cfg := j.Cfg
	cfg.OutDir = RetryDir(j.Cfg.OutDir)
	if err := os.Mkdir(cfg.OutDir, 0o755); err != nil {
		// Run folders are created exclusively; another run's folder is never reused.
		first.Reasons = append(first.Reasons, fmt.Sprintf("not retried: %v", err))
		return first
	}
	if cfg.Logf != nil {
		cfg.Logf("FAIL on timing-only assertions alone: running %s once more into %s", j.Name, cfg.OutDir)
	}
	retry := run(ctx, cfg)
	out := results.Retried(first, j.Cfg.OutDir, retry, cfg.OutDir, j.Cfg.Strict)
	// Both folders' reports now carry the links (and the retry its flake).
	// The folder of the result that stands for the job is saved last: a
	// failure to save the other makes it ERROR first, and Save makes a
	// result ERROR when its own folder cannot be written, so out's
	// result.json agrees with the verdict returned.
	other, otherDir, outDir := retry, cfg.OutDir, j.Cfg.OutDir
	if out == retry {
		other, otherDir, outDir = first, j.Cfg.OutDir, cfg.OutDir
	}
	if err := report.Save(otherDir, other); err != nil && out.Verdict != results.Error {
		out.Verdict, out.Reasons = results.Error, append(out.Reasons, err.Error())
	}
	report.Save(outDir, out)
	return out
}
