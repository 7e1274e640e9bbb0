package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/runner/vm"
)

// TestStarved: the starvation rule on the shares measured for starvedRan
// (one CPU-bound thread over 5 s on the lab's busy 2-core host), and on a
// halted guest and a guest with more busy vCPUs than the host has cores.
func TestStarved(t *testing.T) {
	share := func(ran, waited float64, vcpus ...int) hostShare {
		return hostShare{wall: 10 * time.Second, ran: time.Duration(ran * 10 * float64(time.Second)),
			waited: time.Duration(waited * 10 * float64(time.Second)), measured: true, vcpus: append(vcpus, 1)[0]}
	}
	for _, tc := range []struct {
		name    string
		share   hostShare
		starved bool
	}{
		{name: "alone on a busy host", share: share(0.60, 0.40)},
		{name: "beside 2 spinning processes", share: share(0.19, 0.80), starved: true},
		{name: "beside 6 spinning processes", share: share(0.08, 0.92), starved: true},
		{name: "a halted guest", share: share(0.002, 0)},
		{name: "4 busy vCPUs on 2 cores", share: share(2.0, 2.0, 4)},
		// A debug guest beside a kernel build that was not niced (measured:
		// 3.03 s of CPU in 5 s, 7.83 s waited, a GRO toggle past its 5 s).
		{name: "2 vCPUs beside a build", share: share(0.61, 1.57, 2), starved: true},
		{name: "2 vCPUs alone", share: share(1.9, 0.1, 2)},
		{name: "not measured", share: hostShare{wall: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.share.starved(); got != tc.starved {
				t.Errorf("%s: starved %v, want %v", tc.share, got, tc.starved)
			}
		})
	}
}

// TestSamplesCutNoted: the samples past the totals are noted in the
// result's Dropped, and the assertions' snapshots still fit after the
// periodic samplers stopped.
func TestSamplesCutNoted(t *testing.T) {
	s := windowScenario(t, "")
	tl := windowTimeline(s)
	tl.sampleBytes = samplerBytes - 10
	rec := sampleRec{Group: pollsGroup, Host: 12.5, Data: wire.Sample{Values: map[string]string{"x": "y"}}}
	if tl.keepSample(&rec) {
		t.Error("a periodic sample past samplerBytes was kept")
	}
	rec.Group = edgesGroup
	if !tl.keepSample(&rec) {
		t.Error("an edge snapshot under MaxSamplesFile was refused")
	}
	r := &run{cfg: Config{OutDir: t.TempDir()}, s: s, res: &results.Result{}, tl: tl}
	r.finish(nil)
	if r.res.Dropped == nil || !strings.Contains(r.res.Dropped.Samples, "periodic samples not kept from 12.50 s on") {
		t.Errorf("dropped %+v, want the samples' cut noted", r.res.Dropped)
	}
}

// scriptedUse is a guest's CPU use growing with host time: ran and waited
// CPU-seconds per second.
func scriptedUse(ran, waited float64) func() (vm.CPUUse, error) {
	var once sync.Once
	var start time.Time
	return func() (vm.CPUUse, error) {
		once.Do(func() { start = time.Now() })
		e := float64(time.Since(start))
		return vm.CPUUse{Ran: time.Duration(ran * e), Waited: time.Duration(waited * e)}, nil
	}
}

// phasedUse is scriptedUse until after, then a whole CPU and no wait.
func phasedUse(ran, waited float64, after time.Duration) func() (vm.CPUUse, error) {
	var once sync.Once
	var start time.Time
	return func() (vm.CPUUse, error) {
		once.Do(func() { start = time.Now() })
		e := time.Since(start)
		if e < after {
			return vm.CPUUse{Ran: time.Duration(ran * float64(e)), Waited: time.Duration(waited * float64(e))}, nil
		}
		base := vm.CPUUse{Ran: time.Duration(ran * float64(after)), Waited: time.Duration(waited * float64(after))}
		return vm.CPUUse{Ran: base.Ran + e - after, Waited: base.Waited}, nil
	}
}

// TestDeadlineMissByHostShare runs deadline misses end to end against an
// in-process guest whose host CPU use is scripted: a starved host is
// ERROR whatever the stacks show, unless the task is still stuck once QEMU
// got more CPU; a guest that answers nothing while QEMU runs and gets its
// CPU is FAIL.
func TestDeadlineMissByHostShare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ran, waited float64
		fedAfter    time.Duration // from then on QEMU gets a whole CPU, 0 = never
		ops         map[string]behaviour
		verdict     results.Verdict
		reason      string
	}{
		{name: "starved, a task blocked", ran: 0.1, waited: 0.9, ops: map[string]behaviour{wire.OpStacks: {data: blockedAgent}},
			verdict: results.Error, reason: "the host starved the guest: QEMU got"},
		{name: "fed, the guest silent", ran: 1, ops: map[string]behaviour{wire.OpStacks: {silent: true}, wire.OpSysrq: {silent: true}},
			verdict: results.Fail, reason: "the guest stopped answering while QEMU ran"},
		{name: "starved, then fed and still blocked", ran: 0.1, waited: 0.9, fedAfter: time.Second,
			ops: map[string]behaviour{wire.OpStacks: {data: blockedAgent}}, verdict: results.Fail, reason: "stuck in the kernel still after QEMU got"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, wall := recheckCPU, recheckWall
			recheckCPU, recheckWall = 300*time.Millisecond, 2*time.Second
			t.Cleanup(func() { recheckCPU, recheckWall = cpu, wall })
			ops := map[string]behaviour{wire.OpLink: {silent: true}}
			for op, b := range tc.ops {
				ops[op] = b
			}
			s := inProcessScenario(t, "  - {name: bounce, link: {dev: vrx, state: down}, deadline: 300ms}\n", "")
			cfg := Config{Scenario: s, OutDir: t.TempDir(), Logf: t.Logf, NoPolls: true, newGuest: func(r *run, accel string) (Guest, error) {
				g := startInProcess(t, r.cfg.OutDir, ops)
				g.use = scriptedUse(tc.ran, tc.waited)
				if tc.fedAfter > 0 {
					g.use = phasedUse(tc.ran, tc.waited, tc.fedAfter)
				}
				return g, nil
			}}
			res := Run(context.Background(), cfg)
			if res.Verdict != tc.verdict || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], tc.reason) {
				t.Errorf("verdict %s %q, want %s naming %q", res.Verdict, res.Reasons, tc.verdict, tc.reason)
			}
			if res.Hang == nil || !strings.HasPrefix(res.Hang.Host, "QEMU got") {
				t.Errorf("hang %+v, want QEMU's CPU use recorded", res.Hang)
			}
		})
	}
}
