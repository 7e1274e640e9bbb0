package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napilab/images"
	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

const (
	// kselftestSlack is added to a test's timeout for the step deadline:
	// only a guest that cannot even report a killed test is hung.
	kselftestSlack = 60 * time.Second
	// defaultKselftestTimeout is the kselftest runner's own default.
	defaultKselftestTimeout = 45 * time.Second
)

// kselftestTimeout is the per-test timeout of name's collection.
func (t *timeline) kselftestTimeout(name string) time.Duration {
	coll, _, _ := strings.Cut(name, ":")
	if d := t.ks.timeouts[coll]; d > 0 {
		return d
	}
	return defaultKselftestTimeout
}

// kselftest runs one upstream selftest with the kselftest runner in the
// guest and records its result. A failing test is a result, not a step
// error: the timeline goes on to the next test.
//
// A failed test runs again at once, in the same guest, up to its retries
// (kselftestRetries): kselftests are written to run one after another in
// one boot (run_kselftest.sh runs a whole collection so), each sets up and
// tears down its own namespaces, so the retry sees the state the next test
// would see anyway, and it saves a boot. It hides nothing the kernel said:
// the console is checked for splats over the whole run, every attempt's
// output is kept, and a pass on retry is reported as flaky. State a failed
// attempt leaves behind can only make the retry fail too (a FAIL, as
// without retries).
func (t *timeline) kselftest(ctx context.Context, st *scenarios.Step, name string) error {
	start := time.Now()
	retries, known := t.kselftestRetries(name)
	var k results.Kselftest
	var attempts []results.Attempt
	for i := 0; i <= retries; i++ {
		a, file, err := t.kselftestOnce(ctx, name, i)
		if err != nil {
			return err
		}
		attempts = append(attempts, results.Attempt{Status: a.Status, Reason: a.Reason, Seconds: a.Seconds, File: file})
		if i == 0 || a.Status == results.KPass || a.Status == results.KXfail {
			k = a // the first failure stands unless a retry passes
		}
		if !retryable(a) || i == retries {
			break
		}
		t.logf("kselftest %s: %s, attempt %d of %d", name, a.Status, i+2, retries+1)
	}
	if len(attempts) > 1 {
		k.Attempts = attempts
	}
	k.KnownFlaky, k.Strict = known, t.ks.strict
	k.Step, k.Seconds = st.Name, time.Since(start).Seconds()
	t.logf("kselftest %s: %s %s (%.1fs)", name, k.Status, k.Reason, k.Seconds)
	t.mu.Lock()
	t.ks.results = append(t.ks.results, k)
	t.mu.Unlock()
	return nil
}

// retryable says whether a test's attempt failed in a way another attempt
// can change: fail or timeout. An error (no result, no kselftests in the
// image) is the lab's and would come again.
func retryable(k results.Kselftest) bool {
	return k.Status == results.KFail || k.Status == results.KTimeout
}

// kselftestRetries is how many times a failing test runs again, and the
// known-flaky list's reason when it lists the test for this kernel: a
// known-flaky test gets its entry's retries when the run retries at all.
func (t *timeline) kselftestRetries(name string) (int, string) {
	n := t.ks.retries
	k, ok := lookupKnownFlaky(t.ks.known, name, t.ks.spec)
	if !ok {
		return n, ""
	}
	if n > 0 {
		n = max(n, k.Retries)
	}
	return n, k.Reason
}

// kselftestBudget is the step time name needs: each attempt's timeout plus
// slack.
func (t *timeline) kselftestBudget(name string) time.Duration {
	n, _ := t.kselftestRetries(name)
	return time.Duration(n+1) * (t.kselftestTimeout(name) + kselftestSlack)
}

// kselftestOnce runs name once (attempt from 0) and returns its result and
// the output file, relative to the run folder.
func (t *timeline) kselftestOnce(ctx context.Context, name string, attempt int) (results.Kselftest, string, error) {
	start := time.Now()
	dir := "/" + images.KselftestDir
	timeout := t.kselftestTimeout(name)
	// The kselftest runner kills the test at its timeout and reports it; the
	// agent kills the runner a little later (or first, when the lab's
	// timeout is shorter than the collection's).
	x := wire.Exec{Argv: []string{dir + "/run_kselftest.sh", "-t", name}, Dir: dir, Timeout: timeout + timeout/10 + 5*time.Second}
	if t.slow {
		// The selftests' own convention for slow machines (netdev CI sets it
		// for debug kernels): gro.sh, so_txtime and txtimestamp relax
		// their timing checks.
		x.Env = append(x.Env, "KSFT_MACHINE_SLOW=yes")
	}
	if t.ks.hook != nil {
		t.ks.hook(name, attempt, &x)
	}
	t.logf("kselftest %s (timeout %v)", name, timeout)
	res, err := t.callExec(ctx, x)
	if ctx.Err() != nil {
		return results.Kselftest{}, "", ctx.Err() // the step deadline or an interrupt: a hang, not a test result
	}
	output := execText(res)
	k := results.KselftestFromOutput(name, output)
	file := ""
	if t.outDir != "" {
		// The runner's own output, KTAP and all, for people and parsers;
		// a retry's beside the first attempt's.
		file = filepath.Join("kselftests", kselftestLogName(name, attempt))
		if err := os.MkdirAll(filepath.Join(t.outDir, "kselftests"), 0o755); err == nil {
			os.WriteFile(filepath.Join(t.outDir, file), []byte(output), 0o644)
		}
	}
	switch {
	case err != nil && strings.Contains(err.Error(), "no such program"):
		k.Status, k.Reason = results.KError, "the guest image has no kselftests (boot the Debian image: lab kselftest, or a scenario with kselftest steps run by lab run)"
	case err != nil && strings.Contains(err.Error(), "killed after"):
		k.Status, k.Reason = results.KTimeout, fmt.Sprintf("killed by the lab after %v (timeout %v)", x.Timeout, timeout)
	case err != nil && k.Status == results.KError:
		k.Reason = err.Error()
	}
	k.Seconds = time.Since(start).Seconds()
	return k, file, nil
}

// kselftestLogName is the output file of a test's attempt: net_x.sh.log,
// then net_x.sh.retry1.log.
func kselftestLogName(name string, attempt int) string {
	base := strings.ReplaceAll(name, "/", "_")
	if attempt == 0 {
		return base + ".log"
	}
	return fmt.Sprintf("%s.retry%d.log", base, attempt)
}

// kselftestReasons lists the failed kselftests as verdict reasons.
func kselftestReasons(ks []results.Kselftest) []string {
	var out []string
	for _, k := range ks {
		if k.Failed() {
			out = append(out, k.ReasonLine())
		}
	}
	return out
}
