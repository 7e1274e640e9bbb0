package runner

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"napilab/kernels"
	"napilab/results"
	"napilab/scenarios"
)

// positiveControl is a regression kernel that puts a real upstream bug back, the
// scenario that must catch it, and the failure title it must report.
type positiveControl struct {
	spec, scenario string
	title          *regexp.Regexp
	params         map[string]string
	// baseParams replace params for the clean base's run (a probe offset
	// that only exists in the control's build).
	baseParams map[string]string
}

var positiveControls = []positiveControl{
	// The NAPI kthread ownership control under GRO flips on a threaded veth:
	// seen as "BUG: unable to handle page fault in veth_xdp_rcv" (+ panic) and
	// "WARNING in napi_complete_done". (threaded-toggle-under-load caught it
	// once, "WARNING in napi_threaded_poll", then passed 5 runs: too rare.)
	{"regress-napi-thread-owner-6.1.yaml", "napi-disable-threaded-gro.yaml", regexp.MustCompile(`^(BUG: |general protection fault|WARNING in |kernel panic)`), nil, nil},
	// The napi_disable hang of 27f0ad71699d: link flips on a threaded
	// virtio-net NIC the host floods (its interrupt keeps scheduling the NAPI).
	{"regress-napi-disable-hang-6.1.yaml", "napi-disable-threaded-nic.yaml", regexp.MustCompile(`^hang in napi_disable$`), nil, nil},
	// A quiet bug: napi_enable() that forgets THREADED. No splat, no stall;
	// only who polled after the link came back tells (10 of 10 runs FAIL).
	{"regress-napi-enable-threaded-6.1.yaml", "napi-disable-threaded-nic.yaml",
		regexp.MustCompile(`^assertion failed: after the flips, eth0 is polled by its kthreads only$`), nil, nil},
	// The napi_disable hang again, at a gentle flood and few flips, where
	// plain repetition rarely catches it; race widening (a busy-wait when
	// the woken kthread's kthread_should_stop() returns) does.
	{"regress-napi-disable-hang-6.1.yaml", "napi-disable-threaded-nic-inject.yaml", regexp.MustCompile(`^hang in `), nil, nil},
	// A narrow race: 3765996e4f0b undone. Plain repetition of the same
	// flips caught it in 0 of 75 runs; a busy-wait between napi_enable()'s
	// two clear_bit()s in 13 of 13 (the stuck NAPI blocks the next
	// napi_disable(), and rtnl with it: the hung task named may be a
	// waiter on rtnl).
	{"regress-napi-enable-race-6.1.yaml", "../runner/testdata/napi-enable-race-inject.yaml", regexp.MustCompile(`^hang in `), nil,
		map[string]string{"at": "napi_enable"}},
}

// TestPositiveControls is make test-lab: each regression kernel must FAIL
// its scenario with the right title within a few runs, and the clean base
// must PASS the same scenario. It builds variants and is opt-in
// (NAPILAB_CONTROLS=1) because a race may need many runs.
func TestPositiveControls(t *testing.T) {
	if os.Getenv("NAPILAB_CONTROLS") == "" {
		t.Skip("set NAPILAB_CONTROLS=1 (make test-lab)")
	}
	base, img := guest(t)
	tries, _ := strconv.Atoi(os.Getenv("NAPILAB_CONTROL_RUNS"))
	if tries == 0 {
		tries = 5
	}
	for _, c := range positiveControls {
		t.Run(c.spec+"/"+c.scenario, func(t *testing.T) {
			s, err := scenarios.Open(filepath.Join("../scenarios", c.scenario), c.params)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := kernels.LoadSpec(filepath.Join("../kernels", c.spec))
			if err != nil {
				t.Fatal(err)
			}
			k, err := kernels.Build(context.Background(), spec, kernels.Options{CacheDir: kernels.DefaultCacheDir()})
			if err != nil {
				t.Fatal(err)
			}
			runOn := func(s *scenarios.Scenario, k results.Kernel, n int) []*results.Result {
				var jobs []Job
				for i := 0; i < n; i++ {
					jobs = append(jobs, Job{Name: strconv.Itoa(i), Cfg: Config{Scenario: s, Kernel: k, Initramfs: img.Path,
						OutDir: filepath.Join(t.TempDir(), strconv.Itoa(i)), Logf: t.Logf}})
				}
				return RunBatch(context.Background(), jobs, 1, true, nil)
			}
			cleanS := s
			if c.baseParams != nil {
				if cleanS, err = scenarios.Open(filepath.Join("../scenarios", c.scenario), c.baseParams); err != nil {
					t.Fatal(err)
				}
			}
			clean := runOn(cleanS, results.Kernel{Spec: "stock-6.1", Key: base.Key, BzImage: base.BzImage}, 1)
			if clean[0].Verdict != results.Pass {
				t.Fatalf("the clean base fails %s: %v", c.scenario, clean[0].Reasons)
			}
			rs := runOn(s, results.Kernel{Spec: spec.Name, Key: k.Key, BzImage: k.BzImage}, tries)
			last := rs[len(rs)-1]
			if last.Verdict != results.Fail {
				t.Fatalf("%s passed %s %d times: the lab did not catch the bug", spec.Name, c.scenario, len(rs))
			}
			if !c.title.MatchString(last.Title()) {
				t.Errorf("%s failed with %q, want %v", spec.Name, last.Title(), c.title)
			}
			t.Logf("%s: FAIL on run %d: %s", spec.Name, len(rs), last.Title())
		})
	}
}
