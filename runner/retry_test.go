package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
	"napilab/scenarios"
)

// A timing-only failure (rate) and a behavioural one (delta), as runs report them.
var (
	slowRate = results.Assert{Name: "rx rate", Kind: "rate", Measured: "10/s", Bound: ">= 100", TimingOnly: true}
	noDelta  = results.Assert{Name: "rx grows", Kind: "delta", Measured: "0", Bound: ">= 1"}
)

func failed(as ...results.Assert) *results.Result {
	r := &results.Result{Scenario: "s", Verdict: results.Pass}
	for _, a := range as {
		r.Asserts = append(r.Asserts, a)
		if !a.Passed {
			r.Verdict = results.Fail
			r.Reasons = append(r.Reasons, a.Reason())
		}
	}
	return r
}

func passed(as ...results.Assert) results.Assert { a := as[0]; a.Passed = true; return a }

// TestRunJobRetriesTimingOnly: a run that failed only on timing-only
// assertions runs once more into its -retry folder; a pass there is
// flaky (a FAIL with strict), anything else is not retried.
func TestRunJobRetriesTimingOnly(t *testing.T) {
	splat := results.Assert{Name: "no kernel splat", Kind: "no-splat", Measured: "1 splats", Bound: "0 splats"}
	for _, tc := range []struct {
		name    string
		runs    []*results.Result // what each Run returns
		retry   bool
		strict  bool
		calls   int
		verdict results.Verdict
		flaky   bool
	}{
		{name: "timing-only failure, pass on retry", runs: []*results.Result{failed(slowRate), failed(passed(slowRate))},
			retry: true, calls: 2, verdict: results.Pass, flaky: true},
		{name: "strict fails the flake", runs: []*results.Result{failed(slowRate), failed(passed(slowRate))},
			retry: true, strict: true, calls: 2, verdict: results.Fail, flaky: true},
		{name: "timing-only failure twice", runs: []*results.Result{failed(slowRate), failed(slowRate)},
			retry: true, calls: 2, verdict: results.Fail},
		{name: "behavioural failure is not retried", runs: []*results.Result{failed(slowRate, noDelta)},
			retry: true, calls: 1, verdict: results.Fail},
		{name: "a splat is not retried", runs: []*results.Result{failed(slowRate, splat)},
			retry: true, calls: 1, verdict: results.Fail},
		{name: "retry off", runs: []*results.Result{failed(slowRate)}, calls: 1, verdict: results.Fail},
		{name: "a lab error on retry leaves the FAIL", runs: []*results.Result{failed(slowRate), {Verdict: results.Error}},
			retry: true, calls: 2, verdict: results.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			var dirs []string
			run := func(_ context.Context, cfg Config) *results.Result {
				dirs = append(dirs, cfg.OutDir)
				return tc.runs[len(dirs)-1]
			}
			if err := mkdir(dir); err != nil {
				t.Fatal(err)
			}
			j := Job{Name: "s", Cfg: Config{OutDir: dir, Strict: tc.strict}, RetryTiming: tc.retry}
			r := runJob(context.Background(), j, run)
			if len(dirs) != tc.calls || r.Verdict != tc.verdict || r.Flaky != tc.flaky {
				t.Fatalf("%d runs %v, verdict %s flaky %v (%q), want %d runs, %s flaky %v", len(dirs), dirs, r.Verdict, r.Flaky, r.Reasons, tc.calls, tc.verdict, tc.flaky)
			}
			if tc.calls == 1 {
				return
			}
			if dirs[1] != dir+"-retry" {
				t.Errorf("retry folder %s", dirs[1])
			}
			// Both folders are kept and link each other.
			first, err := results.Read(filepath.Join(dir, "result.json"))
			if err != nil || first.RetriedIn != dirs[1] {
				t.Errorf("first run's result: %v, retried in %q", err, first.RetriedIn)
			}
			if tc.verdict == results.Error {
				return
			}
			second, err := results.Read(filepath.Join(dirs[1], "result.json"))
			if err != nil || second.RetryOf == nil || second.RetryOf.Dir != dir || second.Flaky != tc.flaky {
				t.Fatalf("retry's result: %v, %+v", err, second)
			}
			if tc.flaky && !strings.Contains(strings.Join(second.FlakyLines(), "\n"), "rx rate: measured 10/s, want >= 100") {
				t.Errorf("flaky lines %q", second.FlakyLines())
			}
		})
	}
}

// TestEvaluateMarksTimingOnly: evaluated assertions carry the classification.
func TestEvaluateMarksTimingOnly(t *testing.T) {
	tl := newTimeline(&scenarios.Scenario{}, 1, nil, nil, t.Logf)
	min := 1.0
	for _, tc := range []struct {
		a    scenarios.Assert
		want bool
	}{
		{scenarios.Assert{Rate: &scenarios.Rate{Metric: "softirqs.NET_RX", Min: &min}}, true},
		{scenarios.Assert{Delta: &scenarios.Delta{Metric: "softirqs.NET_RX", Min: &min}}, false},
	} {
		if got := tl.s.Evaluate(tl.record(), &tc.a); got.TimingOnly != tc.want {
			t.Errorf("%s: timing-only %v, want %v", got.Kind, got.TimingOnly, tc.want)
		}
	}
}

func mkdir(d string) error { return os.MkdirAll(d, 0o755) }

// A retry never writes into a folder that exists: run folders are exclusive.
func TestRetryFolderIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	for _, d := range []string{dir, RetryDir(dir)} {
		if err := mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	run := func(context.Context, Config) *results.Result {
		calls++
		return failed(slowRate)
	}
	r := runJob(context.Background(), Job{Name: "s", Cfg: Config{OutDir: dir}, RetryTiming: true}, run)
	if calls != 1 || r.Verdict != results.Fail || !strings.Contains(strings.Join(r.Reasons, "\n"), "not retried") {
		t.Errorf("%d runs, verdict %s %q: want one run, FAIL, not retried", calls, r.Verdict, r.Reasons)
	}
}
