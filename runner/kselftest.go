package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napilab/images"
	"napilab/images/wire"
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
	if d := t.ksTimeouts[coll]; d > 0 {
		return d
	}
	return defaultKselftestTimeout
}

// kselftest runs one upstream selftest with the kselftest runner in the
// guest and records its result. A failing test is a result, not a step
// error: the timeline goes on to the next test.
func (t *timeline) kselftest(ctx context.Context, st *scenarios.Step, name string) error {
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
	t.logf("kselftest %s (timeout %v)", name, timeout)
	res, err := t.callExec(ctx, x)
	if ctx.Err() != nil {
		return ctx.Err() // the step deadline or an interrupt: a hang, not a test result
	}
	output := execText(res)
	k := results.KselftestFromOutput(name, output)
	if t.outDir != "" {
		// The runner's own output, KTAP and all, for people and parsers.
		dir := filepath.Join(t.outDir, "kselftests")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".log"), []byte(output), 0o644)
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
	k.Step, k.Seconds = st.Name, time.Since(start).Seconds()
	t.logf("kselftest %s: %s %s (%.1fs)", name, k.Status, k.Reason, k.Seconds)
	t.mu.Lock()
	t.kselftests = append(t.kselftests, k)
	t.mu.Unlock()
	return nil
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
