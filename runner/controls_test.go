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
	// debug controls are caught only by the debug flavour: the control's
	// debug build must FAIL on its first run, its plain build PASS.
	debug bool
	// labOnly controls run under make test-lab (NAPILAB_CONTROLS=all) only:
	// their base is a cold build make test leaves out of CI's 90 minutes.
	labOnly bool
}

var positiveControls = []positiveControl{
	// The NAPI kthread ownership control under GRO flips on a threaded veth:
	// seen as "BUG: unable to handle page fault in veth_xdp_rcv" (+ panic) and
	// "WARNING in napi_complete_done". (threaded-toggle-under-load caught it
	// once, "WARNING in napi_threaded_poll", then passed 5 runs: too rare.)
	{spec: "regress-napi-thread-owner-6.1.yaml", scenario: "napi-disable-threaded-gro.yaml",
		title: regexp.MustCompile(`^(BUG: |general protection fault|WARNING in |kernel panic)`)},
	// The napi_disable hang of 27f0ad71699d: link flips on a threaded
	// virtio-net NIC the host floods (its interrupt keeps scheduling the NAPI).
	{spec: "regress-napi-disable-hang-6.1.yaml", scenario: "napi-disable-threaded-nic.yaml",
		title: regexp.MustCompile(`^hang in napi_disable$`)},
	// A quiet bug: napi_enable() that forgets THREADED. No splat, no stall;
	// only who polled after the link came back tells (10 of 10 runs FAIL).
	{spec: "regress-napi-enable-threaded-6.1.yaml", scenario: "napi-disable-threaded-nic.yaml",
		title: regexp.MustCompile(`^assertion failed: after the flips, eth0 is polled by its kthreads only$`)},
	// The same kernel under veth GRO flips on a threaded veth: each GRO on
	// adds vrx's NAPI anew and napi_enable() leaves it in softirq mode. The
	// scenario's own assertions pass (its kthread polled the flood before
	// the flips); only the model's invariant sees softirq polling a NAPI
	// whose device is threaded after the last flip.
	{spec: "regress-napi-enable-threaded-6.1.yaml", scenario: "napi-disable-threaded-gro.yaml",
		title: regexp.MustCompile(`^invariant failed: threaded-not-softirq$`)},
	// A backport of 6.17's assumption (a NAPI with a kthread is threaded)
	// into ____napi_schedule(): on 6.1 the kthreads outlive threaded=0 and
	// go on polling. threaded-off-while-down only asks for traffic, which
	// flows; the model's invariant sees the kthread poll in softirq mode.
	{spec: "regress-napi-schedule-by-thread-6.1.yaml", scenario: "threaded-off-while-down.yaml",
		title: regexp.MustCompile(`^invariant failed: softirq-not-kthread$`)},
	// napi_busy_loop() backing off a threaded NAPI: busy polling works only
	// while threaded is 0, and busy-poll-threaded's own busy-poll count
	// (over the whole run) passes; the invariant sees no busy poll in the
	// threaded phases while the receiver runs.
	{spec: "regress-busy-poll-skips-threaded-6.1.yaml", scenario: "busy-poll-threaded.yaml",
		title: regexp.MustCompile(`^invariant failed: busy-poll-reaches$`)},
	// rps_cpus spread over every CPU (store_rps_map ORs the housekeeping
	// CPUs in): the packets still reach the mask's CPU by IPI and rps-cost
	// asserts only that eth0 received them; the invariant sees backlog
	// packets polled on cpu0, outside the mask.
	{spec: "regress-rps-outside-mask-6.1.yaml", scenario: "perf/rps-cost.yaml",
		title: regexp.MustCompile(`^invariant failed: rps-in-mask$`)},
	// virtnet_poll() re-arms the RX interrupt and completes without looking
	// at the ring again: with event_idx a queue the device filled in between
	// raises no interrupt, ever, while its NAPI sits idle. Nothing hangs or
	// warns; the liveness invariant sees eth0 silent while the host's
	// injector sends (5 of 5 under seed 000, whose own assertions passed 4
	// of them: the scenario here asserts nothing the race's timing decides).
	{spec: "regress-virtio-rx-rearm-6.1.yaml", scenario: "../runner/testdata/nic-live.yaml",
		title: regexp.MustCompile(`^invariant failed: rx-live$`)},
	// napi_complete_done flushes the listified batch only when GRO held
	// packets: each NAPI keeps the last datagrams of a flow that stops,
	// polled but neither delivered nor counted; the conservation
	// invariant's account of each namespace sees them vanish.
	{spec: "regress-gro-normal-list-6.1.yaml", scenario: "../runner/testdata/udp-conserve.yaml",
		title: regexp.MustCompile(`^invariant failed: udp-conserved$`)},
	// The napi_disable hang again, at a gentle flood, where plain
	// repetition rarely catches it; race widening (a busy-wait when the
	// woken kthread's kthread_should_stop() returns) does: 3 ms over 5 flips
	// caught it in 2 of 10 runs on a quiet host, 10 ms over 20 flips in 8 of 8.
	{spec: "regress-napi-disable-hang-6.1.yaml", scenario: "napi-disable-threaded-nic-inject.yaml",
		title: regexp.MustCompile(`^hang in `)},
	// A narrow race: 3765996e4f0b undone. Plain repetition of the same
	// flips caught it in 0 of 75 runs; a busy-wait between napi_enable()'s
	// two clear_bit()s in 13 of 13 (the stuck NAPI blocks the next
	// napi_disable(), and rtnl with it: the hung task named may be a
	// waiter on rtnl).
	{spec: "regress-napi-enable-race-6.1.yaml", scenario: "../runner/testdata/napi-enable-race-inject.yaml",
		title: regexp.MustCompile(`^hang in `), baseParams: map[string]string{"at": "napi_enable"}},
	// de33212f768c undone: lowering a NIC's channels takes cpu_hotplug_lock
	// twice. Harmless without CPU hotplug; lockdep names it.
	{spec: "regress-virtio-cpus-lock-6.1.yaml", scenario: "napi-disable-race.yaml", debug: true,
		title: regexp.MustCompile(`^possible deadlock in (netif_reset_xps_queues|netif_set_real_num_tx_queues|virtnet_set_channels)`)},
	// 5ce76fe1eead undone: rcu_dereference() under RTNL only, when the
	// topology creates a veth. Harmless; PROVE_RCU names it.
	{spec: "regress-veth-xdp-rcu-6.12.yaml", scenario: "napi-disable-race.yaml", debug: true,
		title: regexp.MustCompile(`^suspicious RCU usage in veth_set_xdp_features$`)},
	// A quiet mutation of threaded busy poll (7.3, with the lab's fix for
	// threaded=0 while down): the kthread tests SCHED where it meant
	// DISABLE and never busy polls, while napi-get reads back busy-poll.
	// Only the polls per packet tell (3 of 3 FAIL: 0.26 polls per packet
	// against 23.7 on the base).
	{spec: "regress-threaded-busy-poll-7.3.yaml", scenario: "threaded-busy-poll.yaml", labOnly: true,
		title: regexp.MustCompile(`^assertion failed: busy polling, not waiting for packets \(empty polls\)$`)},
	// 7.3 whose threaded=0 clears the mode without stopping the kthreads
	// (6.16's behaviour): softirq polls, no kthread does, the knob reads 0;
	// only the release-aware invariant sees the kthreads stay (5 of 5).
	{spec: "regress-napi-kthread-stays-7.3.yaml", scenario: "threaded-off-while-down.yaml", labOnly: true,
		title: regexp.MustCompile(`^invariant failed: softirq-no-kthread$`)},
	// A realistic mutation: __netif_set_xps_queue() forgets to free the
	// maps it replaces. Each channel change leaks; kmemleak names it.
	{spec: "regress-xps-map-leak-6.1.yaml", scenario: "napi-disable-race.yaml", debug: true,
		title: regexp.MustCompile(`^memory leak in __netif_set_xps_queue$`)},
}

// TestPositiveControls: each regression kernel must FAIL its scenario with
// the right title within a few runs (a debug control on its debug build's
// first run), and the clean base (its debug flavour for a debug control)
// must PASS the same scenario. A run that ends in ERROR (the lab could not
// tell) is run again, twice at most. Part of make test: a lab whose proof of
// detection is optional is not proven. make test-lab (NAPILAB_CONTROLS=all)
// also shows that each debug control's plain build PASSes: its bug is quiet
// without the sanitizers (for regress-veth-xdp-rcu-6.12 that costs a cold
// stock-6.12 build, which make test leaves out of CI's 90 minutes).
func TestPositiveControls(t *testing.T) {
	const maxErrors = 2
	_, img := guest(t)
	tries, _ := strconv.Atoi(os.Getenv("NAPILAB_CONTROL_RUNS"))
	if tries == 0 {
		tries = 5
	}
	build := func(t *testing.T, spec *kernels.Spec) results.Kernel {
		k, err := kernels.Build(context.Background(), spec, kernels.Options{CacheDir: kernels.DefaultCacheDir()})
		if err != nil {
			t.Fatal(err)
		}
		return results.Kernel{Spec: spec.Name, Flavour: spec.Flavour().String(), Key: k.Key, BzImage: k.BzImage}
	}
	for _, c := range positiveControls {
		t.Run(c.spec+"/"+c.scenario, func(t *testing.T) {
			if c.labOnly && os.Getenv("NAPILAB_CONTROLS") != "all" {
				t.Skip("make test-lab only (NAPILAB_CONTROLS=all): its base is a cold build CI's 90 minutes leave out")
			}
			s, err := scenarios.Open(filepath.Join("../scenarios", c.scenario), c.params)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := kernels.LoadSpec(filepath.Join("../kernels", c.spec))
			if err != nil {
				t.Fatal(err)
			}
			baseSpec, err := kernels.LoadSpec(spec.Extends)
			if err != nil {
				t.Fatal(err)
			}
			plainSpec, plainS := spec, s
			if c.debug {
				spec, baseSpec = spec.WithDebug(), baseSpec.WithDebug()
				if s, _, err = s.ForFlavour(scenarios.FlavourDebug, c.params); err != nil {
					t.Fatal(err)
				}
			}
			// Runs are judged as lab run judges them: a FAIL on timing-only
			// assertions alone runs once more, and a pass there is flaky.
			runOn := func(s *scenarios.Scenario, k results.Kernel, n int) []*results.Result {
				var jobs []Job
				for i := 0; i < n; i++ {
					jobs = append(jobs, Job{Name: strconv.Itoa(i), RetryTiming: true, Cfg: Config{Scenario: s, Kernel: k, Initramfs: img.Path,
						OutDir: filepath.Join(t.TempDir(), strconv.Itoa(i)), Logf: t.Logf}})
				}
				return RunBatch(context.Background(), jobs, 1, true, nil)
			}
			// A run that ended in ERROR decided nothing either way (a host too
			// loaded to boot the guest in time): it is reported and run
			// again, at most maxErrors times; a PASS or FAIL stands.
			decide := func(s *scenarios.Scenario, k results.Kernel, n int) []*results.Result {
				var rs []*results.Result
				for errs := 0; ; errs++ {
					more := runOn(s, k, n)
					rs = append(rs, more...)
					last := more[len(more)-1]
					if last.Verdict != results.Error || errs == maxErrors {
						return rs
					}
					t.Logf("%s: run %d ended in ERROR, which proves nothing either way (again): %v",
						k.Spec, len(rs), last.Reasons)
				}
			}
			cleanS := s
			if c.baseParams != nil {
				if cleanS, err = scenarios.Open(filepath.Join("../scenarios", c.scenario), c.baseParams); err != nil {
					t.Fatal(err)
				}
			}
			base := build(t, baseSpec)
			if clean := decide(cleanS, base, 1); clean[len(clean)-1].Verdict != results.Pass {
				t.Fatalf("the clean base %s: %s on %s: %v", base.Spec, clean[len(clean)-1].Verdict, c.scenario, clean[len(clean)-1].Reasons)
			}
			if c.debug && os.Getenv("NAPILAB_CONTROLS") == "all" {
				// The bug is quiet: without the sanitizers the control passes.
				if r := runOn(plainS, build(t, plainSpec), 1); r[0].Verdict != results.Pass {
					t.Fatalf("the plain %s already fails %s (%s): not a debug control", plainSpec.Name, c.scenario, r[0].Title())
				}
			}
			k := build(t, spec)
			n := tries
			if c.debug {
				n = 1
			}
			rs := decide(s, k, n)
			last := rs[len(rs)-1]
			if last.Verdict != results.Fail {
				t.Fatalf("%s: %s on %s after %d runs, the last: %v: the lab did not catch the bug",
					spec.Name, last.Verdict, c.scenario, len(rs), last.Reasons)
			}
			if !c.title.MatchString(last.Title()) {
				t.Errorf("%s failed with %q, want %v", spec.Name, last.Title(), c.title)
			}
			t.Logf("%s: FAIL on run %d: %s", spec.Name, len(rs), last.Title())
		})
	}
}
