package campaign

import (
	"time"

	"napilab/runner"
)

// RunOptions are what a lab run campaign reads of its flags.
type RunOptions struct {
	Kernels   []string // the kernel specs every scenario runs on
	Out       string   // the folder for run folders
	Accel     string   // kvm or tcg ("": the default)
	Repeat    int      // runs of each scenario on each kernel
	UntilFail bool     // stop starting runs after the first FAIL
	NoPolls   bool     // sample no NAPI polls
	Verbose   bool     // the runner's progress lines
	Flavour   string   // the build flavour of every kernel
	// BuildFirst builds every kernel before the first run (no run beside a build).
	BuildFirst bool
	// KselftestTimeout caps each kselftest's timeout (0: its collection's settings).
	KselftestTimeout time.Duration
	Flakes           Flakes
	Perf             PerfOptions
}

// Flakes say how runs retry failures that may be the host's timing.
type Flakes struct {
	// KselftestRetries is how many times a failed kselftest runs again in
	// the same guest (known-flaky tests may get more).
	KselftestRetries int
	// RetryTiming runs a run that FAILed on timing-only assertions alone
	// once more on the same kernel.
	RetryTiming bool
	// Strict counts flakes (passed on retry) as failures.
	Strict bool
}

// Apply sets the job's retry and strictness.
func (o *Flakes) Apply(j *runner.Job) {
	j.Cfg.KselftestRetries, j.Cfg.Strict, j.RetryTiming = o.KselftestRetries, o.Strict, o.RetryTiming
}

// PerfOptions are the options a perf scenario's A/B run reads.
type PerfOptions struct {
	AgainstBaseline bool   // use a fitting stored baseline instead of running A
	Baselines       string // the stored baselines' folder
	Seed            int64  // bootstrap seed
}
