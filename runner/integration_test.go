package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/results/stats"
	"napilab/scenarios"
)

// guest builds (or finds in the cache) the stock kernel and the initramfs;
// tests that need them are skipped in -short mode or without root and QEMU.
func guest(t testing.TB) (*kernels.Artifact, *images.Image) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a real kernel")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for taps and namespaces")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("needs qemu-system-x86_64")
	}
	spec, err := kernels.LoadSpec("../kernels/stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, err := kernels.Build(ctx, spec, kernels.Options{CacheDir: kernels.DefaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Build(ctx, images.Options{CacheDir: kernels.DefaultCacheDir(), ModuleDir: ".."})
	if err != nil {
		t.Fatal(err)
	}
	return k, img
}

// debugGuest builds (or finds) stock-6.1's debug flavour.
func debugGuest(t testing.TB) *kernels.Artifact {
	t.Helper()
	spec, err := kernels.LoadSpec("../kernels/stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernels.Build(context.Background(), spec.WithDebug(), kernels.Options{CacheDir: kernels.DefaultCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// runScenario runs a scenario file and checks that nothing it started is
// left: no open descriptors (taps, the namespace) and no QEMU.
func runScenario(t testing.TB, file string, k *kernels.Artifact, img *images.Image, edit func(*testConfig)) *results.Result {
	t.Helper()
	s, err := scenarios.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	fdsBefore := openFDs(t)
	cfg := &testConfig{Config: Config{Scenario: s, Kernel: results.Kernel{Spec: "stock-6.1", Key: k.Key, BzImage: k.BzImage},
		Initramfs: img.Path, ImageHash: img.Hash, OutDir: t.TempDir(), Logf: t.Logf}}
	if edit != nil {
		edit(cfg)
	}
	ctx := context.Background()
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	res := Run(ctx, cfg.Config)
	t.Logf("%s: %s %v", s.Name, res.Verdict, res.Reasons)
	if after := openFDs(t); after != fdsBefore {
		t.Errorf("open descriptors: %d before the run, %d after", fdsBefore, after)
	}
	if out, _ := exec.Command("pgrep", "-f", cfg.OutDir).Output(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("processes left running: %s", out)
	}
	for _, f := range []string{"result.json", "junit.xml", "console.log", "qemu.cmdline"} {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	return res
}

// runShipped runs a shipped scenario as lab run does by default: a FAIL on
// timing-only assertions alone (a starved TCG guest) runs once more, and a
// pass there is flaky, not a FAIL (runJob); a failed kselftest runs once
// more in the same guest. Both runs are checked as runScenario checks one.
func runShipped(t testing.TB, file string, k *kernels.Artifact, img *images.Image, edit func(*testConfig)) *results.Result {
	t.Helper()
	j := Job{Name: filepath.Base(file), RetryTiming: true, Cfg: Config{OutDir: t.TempDir()}}
	return runJob(context.Background(), j, func(_ context.Context, cfg Config) *results.Result {
		return runScenario(t, file, k, img, func(c *testConfig) {
			c.OutDir, c.KselftestRetries = cfg.OutDir, DefaultKselftestRetries
			if edit != nil {
				edit(c)
			}
		})
	})
}

// testConfig is a run's Config plus an interruption after timeout.
type testConfig struct {
	Config
	timeout time.Duration
}

func openFDs(t testing.TB) int {
	settleFinalizers()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// settleFinalizers runs a garbage collection and waits (up to a second)
// for the finalizers it queued: a file an earlier test dropped is closed
// by its finalizer, and closing during the next run made that run's count
// of open descriptors go down by one (TestGuestConsoleFlood, after the
// boot tests: 11 before, 10 after).
func settleFinalizers() {
	type sentinel struct{ p *int }
	done := make(chan struct{})
	runtime.SetFinalizer(&sentinel{p: new(int)}, func(*sentinel) { close(done) })
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

func TestShippedScenarios(t *testing.T) {
	k, img := guest(t)
	files, _ := filepath.Glob("../scenarios/*.yaml")
	if len(files) < 5 {
		t.Fatalf("%d shipped scenarios, want the five families", len(files))
	}
	// The seed experiments too: their loads (xsk, sched'd receivers) on a real guest.
	seeds, _ := filepath.Glob("../scenarios/seeds/*.yaml")
	if len(seeds) < 4 {
		t.Fatalf("%d seed scenarios, want 000, 001, 003 and 004", len(seeds))
	}
	for _, f := range append(files, seeds...) {
		s, err := scenarios.Open(f, nil)
		if err == nil && s.NeedsDebian() {
			continue // TestShippedKselftestScenarios
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err == nil && s.Unsupported(k.Release()) != "" {
				t.Skipf("%s on %s: %s", s.Name, k.Release(), s.Unsupported(k.Release()))
			}
			res := runShipped(t, f, k, img, nil)
			if res.Verdict != results.Pass {
				t.Fatalf("verdict %s: %v\n%s", res.Verdict, res.Reasons, res.ConsoleTail)
			}
		})
	}
}

func TestThreadedToggleDetails(t *testing.T) {
	k, img := guest(t)
	res := runShipped(t, "../scenarios/threaded-toggle-under-load.yaml", k, img, nil)
	if res.Verdict != results.Pass {
		t.Fatalf("verdict %s: %v\n%s", res.Verdict, res.Reasons, res.ConsoleTail)
	}
	// The scenario's: no-splat, two threads-while, two no-stall, grows,
	// four who-polled; then every invariant, judged over the toggles.
	var own []string
	judged := map[string]bool{}
	for _, a := range res.Asserts {
		if a.Kind != results.KindInvariant {
			own = append(own, a.Name)
			continue
		}
		judged[a.Name] = !a.Unmeasured
	}
	if len(own) != 10 {
		t.Errorf("%d scenario assertions evaluated, want 10: %q", len(own), own)
	}
	// The link never goes down: down-not-polled never applies, so is absent.
	// Both loads are udp: rx-live judges eth0 and vrx through the flips,
	// udp-conserved the root namespace they end in (no link, GRO or XDP
	// change on their way).
	if want := map[string]bool{"threaded-not-softirq": true, "softirq-not-kthread": true, "rx-live": true,
		"udp-conserved": true}; !reflect.DeepEqual(judged, want) {
		t.Errorf("invariants judged %v, want %v", judged, want)
	}
	for _, l := range res.Loads {
		if l.Received == 0 || l.Sent == 0 {
			t.Errorf("load %s: sent %d received %d", l.Name, l.Sent, l.Received)
		}
	}
	if !strings.HasPrefix(res.Kernel.Release, "6.1.") {
		t.Errorf("guest kernel %q, want 6.1.x", res.Kernel.Release)
	}
}

func TestProvokedWarningFails(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "testdata/lkdtm-warning.yaml", k, img, nil)
	if res.Verdict != results.Fail {
		t.Fatalf("verdict %s, want FAIL: %v", res.Verdict, res.Reasons)
	}
	if len(res.Splats) == 0 || res.Splats[0].Title != "WARNING in lkdtm_WARNING" || res.Splats[0].Step != "provoke" {
		t.Errorf("splats = %+v, want WARNING in lkdtm_WARNING during step provoke", res.Splats)
	}
}

// TestDebugDetectors: on the debug flavour, lkdtm provokes one bug class
// per step and each is named with its syzkaller-style title on its step.
func TestDebugDetectors(t *testing.T) {
	_, img := guest(t)
	k := debugGuest(t)
	res := runScenario(t, "testdata/lkdtm-debug.yaml", k, img, func(c *testConfig) { c.Kernel.Flavour = "debug" })
	if res.Verdict != results.Fail {
		t.Fatalf("verdict %s, want FAIL: %v", res.Verdict, res.Reasons)
	}
	want := map[string]string{
		"use-after-free": "KASAN: use-after-free Read in lkdtm_READ_AFTER_FREE",
		"out-of-bounds":  "KASAN: slab-out-of-bounds Write in lkdtm_SLAB_LINEAR_OVERFLOW",
		"array-bounds":   "UBSAN: array-index-out-of-bounds in lkdtm_ARRAY_BOUNDS",
		"refcount":       "WARNING: refcount bug in lkdtm_REFCOUNT_DEC_ZERO",
		"list":           "BUG: corrupted list in lkdtm_CORRUPT_LIST_ADD",
	}
	got := map[string]string{}
	for _, sp := range res.Splats {
		got[sp.Step] = sp.Title
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splats by step:\n%v\nwant:\n%v", got, want)
	}
}

func TestHangIsCaught(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "testdata/lkdtm-hang.yaml", k, img, nil)
	if res.Verdict != results.Fail || res.Hang == nil {
		t.Fatalf("verdict %s hang %+v, want FAIL with a hang", res.Verdict, res.Hang)
	}
	if res.Hang.Step != "hang" || res.Hang.Function != "direct_entry" {
		t.Errorf("hang = step %q in %q, want step hang in direct_entry (lkdtm_HUNG_TASK is inlined there)\n%s", res.Hang.Step, res.Hang.Function, res.Hang.Evidence)
	}
}

func TestPanicFails(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "testdata/lkdtm-panic.yaml", k, img, nil)
	if res.Verdict != results.Fail {
		t.Fatalf("verdict %s, want FAIL: %v", res.Verdict, res.Reasons)
	}
	found := false
	for _, s := range res.Splats {
		found = found || s.Type == results.CrashPanic
	}
	if !found {
		t.Errorf("no panic among splats %+v", res.Splats)
	}
}

// TestNoInitIsError: an initramfs without /init is the lab's fault, not
// the kernel's.
func TestNoInitIsError(t *testing.T) {
	k, img := guest(t)
	empty := filepath.Join(t.TempDir(), "empty.cpio")
	f, err := os.Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := images.Write(f, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res := runScenario(t, "testdata/lkdtm-warning.yaml", k, img, func(c *testConfig) { c.Initramfs = empty })
	if res.Verdict != results.Error || !strings.Contains(strings.Join(res.Reasons, "\n"), "has no working /init") {
		t.Errorf("verdict %s %v, want ERROR: no working /init", res.Verdict, res.Reasons)
	}
}

// TestSilentBootEvidence: a kernel that starts but brings up no agent is
// an ERROR (nobody can tell a slow host from a hung kernel), and it is
// asked for SysRq-w and -l through QEMU's keyboard first, so that
// console.log shows where it waits.
func TestSilentBootEvidence(t *testing.T) {
	k, img := guest(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "init")
	build := exec.Command("go", "build", "-o", bin, "./testdata/sleepinit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build sleepinit: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cpio := filepath.Join(dir, "sleep.cpio")
	f, err := os.Create(cpio)
	if err != nil {
		t.Fatal(err)
	}
	if err := images.Write(f, []images.File{{Name: "init", Data: data, Mode: 0o755}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out string
	res := runScenario(t, "testdata/bench-boot.yaml", k, img, func(c *testConfig) {
		c.Initramfs, c.bootLimit, out = cpio, 15*time.Second, c.OutDir
	})
	reasons := strings.Join(res.Reasons, "\n")
	if res.Verdict != results.Error || !strings.Contains(reasons, "no agent after 15s: the kernel started") ||
		!strings.Contains(reasons, "(SysRq-w, -l) are in console.log") {
		t.Errorf("verdict %s %v, want ERROR: no agent, SysRq output in console.log", res.Verdict, res.Reasons)
	}
	con, _ := os.ReadFile(filepath.Join(out, "console.log"))
	for _, want := range []string{"sleepinit: no agent here", "sysrq: Show Blocked State", "sysrq: Show backtrace of all active CPUs"} {
		if !bytes.Contains(con, []byte(want)) {
			t.Errorf("console.log lacks %q:\n%s", want, con)
		}
	}
}

// TestRefusedWriteFails: an errno from the kernel crosses the wire typed
// and fails the run.
func TestRefusedWriteFails(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "testdata/refused.yaml", k, img, nil)
	if res.Verdict != results.Fail || !strings.Contains(strings.Join(res.Reasons, "\n"), "invalid argument") {
		t.Errorf("verdict %s %v, want FAIL: invalid argument", res.Verdict, res.Reasons)
	}
}

func TestMissingQEMUIsError(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "testdata/lkdtm-warning.yaml", k, img, func(c *testConfig) { c.QEMU = "/nonexistent/qemu" })
	if res.Verdict != results.Error {
		t.Errorf("verdict %s %v, want ERROR", res.Verdict, res.Reasons)
	}
}

func TestInterruptLeavesNothing(t *testing.T) {
	k, img := guest(t)
	res := runScenario(t, "../scenarios/threaded-toggle-under-load.yaml", k, img, func(c *testConfig) { c.timeout = 5 * time.Second })
	if res.Verdict != results.Error || !strings.Contains(strings.Join(res.Reasons, "\n"), "interrupted") {
		t.Errorf("verdict %s %v, want ERROR: interrupted", res.Verdict, res.Reasons)
	}
}

// TestFlakeRate runs a scenario that fails one run in two and checks the
// measured rate's Wilson interval at z=4.89 contains 0.5, and that the
// failure title is counted. With 40 independent runs that accepts 5 to 35
// failures: the test fails spuriously with probability 2e-7, while a coin
// that never or always fires, or a count that loses or doubles failures,
// fails it. (At p=0.2 a 99.9% interval missed once in CI, 17/40: no
// interval at n=40 can both reject 0 failures and keep the false alarm
// below 1e-4 there.)
func TestFlakeRate(t *testing.T) {
	k, img := guest(t)
	s, err := scenarios.Open("testdata/flaky-one-in-two.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for i := 0; i < 40; i++ {
		jobs = append(jobs, Job{Name: "flaky#" + strconv.Itoa(i), Group: "flaky", Cfg: Config{Scenario: s,
			Kernel: results.Kernel{Spec: "stock-6.1", Key: k.Key, BzImage: k.BzImage}, Initramfs: img.Path,
			OutDir: filepath.Join(t.TempDir(), strconv.Itoa(i))}})
	}
	rs := RunBatch(context.Background(), jobs, MaxParallel(2, 256), false, nil)
	f := stats.SummariseFlakes(rs)
	lo, hi := stats.Wilson(f.Fails, f.Runs, 4.89)
	t.Logf("%s; z=4.89 interval %.3f-%.3f", f, lo, hi)
	if f.Runs != 40 || lo > 0.5 || hi < 0.5 {
		t.Errorf("%d runs, %d failed: interval %.3f-%.3f misses 0.5", f.Runs, f.Fails, lo, hi)
	}
	if f.Titles[`step "coin" (line 5) failed: injected fault (p=0.5)`] != f.Fails {
		t.Errorf("failure titles %v", f.Titles)
	}
}
