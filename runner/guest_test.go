package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

// inProcessScenario has a veth pair from the agent's root namespace into
// netns a and a UDP flood over it; steps is its timeline, asserts its
// asserts: after a no-splat.
func inProcessScenario(t testing.TB, steps, asserts string) *scenarios.Scenario {
	return inProcessScenarioWith(t, "", steps, asserts)
}

// inProcessScenarioWith is inProcessScenario with more top-level sections.
func inProcessScenarioWith(t testing.TB, top, steps, asserts string) *scenarios.Scenario {
	t.Helper()
	src := `name: in-process
defaults: {deadline: 2s}
topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, static_neigh: true, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
loads:
  flood: {kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9000}, rate: 5000}
` + top + "timeline:\n" + steps + "asserts:\n  - no-splat: {}\n" + asserts
	s, err := scenarios.Parse("in-process.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// floodFor sets vrx's MTU, then floods while "flooding" sleeps d.
func floodFor(d string) string {
	return `  - {name: mtu, write: {path: /sys/class/net/vrx/mtu, value: "1400"}}
  - start: [flood]
  - {name: flooding, sleep: ` + d + `}
  - stop: [flood]
`
}

// floodSteps flood for a moment.
var floodSteps = floodFor("300ms")

// datagramsArrive asserts that at least min datagrams arrive over the run.
func datagramsArrive(min string) string {
	return "  - name: datagrams arrive\n    grows: {metric: snmp.Udp.InDatagrams, min: " + min + "}\n"
}

// whileFlooding asserts that datagrams arrive while flooding runs, at least
// min. The window is measured between snapshots a quarter of its length
// from its edges at most: a loaded host's replies need the slack of a long one.
func whileFlooding(min string) string {
	return "  - name: datagrams arrive while flooding\n    during: {step: flooding}\n" +
		"    grows: {metric: snmp.Udp.InDatagrams, min: " + min + "}\n"
}

// blockedAgent is a stacks answer naming an agent thread stuck in napi_disable.
var blockedAgent = []wire.TaskStack{{PID: 1, Comm: agentComm, State: "D", Wchan: "napi_disable",
	Stack: "[<0>] __schedule+0x2d0/0x760\n[<0>] napi_disable+0x4d/0x80\n[<0>] dev_close_many+0x9c/0x150\n"}}

const inProcessWarning = "[   23.412350] WARNING: CPU: 1 PID: 312 at net/core/dev.c:6402 napi_disable+0xb4/0xd0\n" +
	"[   23.414501] RIP: 0010:napi_disable+0xb4/0xd0\n" +
	"[   23.431002] ---[ end trace 0000000000000000 ]---\n"

// TestInProcessVerdicts runs scenarios end to end (Run, setup to poweroff)
// against the real agent in this process and checks the verdict and its
// first reason: PASS on a clean run, FAIL on evidence against the kernel,
// ERROR on the lab's or the host's problems.
func TestInProcessVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		top     string // top-level sections
		steps   string
		asserts string
		ops     map[string]behaviour
		verdict results.Verdict
		reason  string                            // a part of the first reason, "" = none
		check   func(*testing.T, *results.Result) // more checks, nil = none
	}{
		{name: "a clean run passes", steps: floodSteps, asserts: datagramsArrive("10"), verdict: results.Pass,
			check: func(t *testing.T, res *results.Result) {
				if len(res.Steps) != 4 || len(res.Loads) != 1 || res.Loads[0].Received == 0 {
					t.Errorf("steps %+v loads %+v, want 4 steps and a flood that arrived", res.Steps, res.Loads)
				}
			}},
		{name: "a failed assertion fails", steps: floodSteps, asserts: datagramsArrive("1e12"), verdict: results.Fail,
			reason: "datagrams arrive"},
		{name: "a write the kernel refuses fails", steps: `  - {name: mtu, write: {path: /sys/class/net/vrx/mtu, value: "-1"}}
`, verdict: results.Fail, reason: `step "mtu" (line 9) failed: write "-1" to /sys/class/net/vrx/mtu`,
			check: func(t *testing.T, res *results.Result) {
				if !strings.HasSuffix(res.Reasons[0], "invalid argument") {
					t.Errorf("reason %q, want EINVAL", res.Reasons[0])
				}
			}},
		{name: "a program that exits non-zero fails", steps: "  - {name: probe, exec: {netns: a, argv: [sh, -c, 'exit 3']}}\n",
			verdict: results.Fail, reason: "sh exited 3"},
		{name: "a splat on the console fails", steps: floodSteps, ops: map[string]behaviour{wire.OpWrite: {console: inProcessWarning, pass: true}},
			verdict: results.Fail, reason: "WARNING in napi_disable", check: func(t *testing.T, res *results.Result) {
				if len(res.Splats) != 1 || res.Splats[0].Step != "mtu" {
					t.Errorf("splats %+v, want one during mtu", res.Splats)
				}
			}},
		{name: "an op that never answers is a hang", steps: "  - {name: bounce, link: {dev: vrx, state: down}, deadline: 300ms}\n",
			ops: map[string]behaviour{wire.OpLink: {silent: true}, wire.OpStacks: {data: blockedAgent}}, verdict: results.Fail,
			reason: `hang: step "bounce" (line 9) did not finish within 300ms: hung in napi_disable`,
			check: func(t *testing.T, res *results.Result) {
				if res.Hang == nil || !strings.Contains(res.Hang.Evidence, "pid 1 init state D") ||
					!strings.Contains(res.Hang.Evidence, "--- console after the deadline ---\nsysrq: Show Blocked State") {
					t.Errorf("hang %+v, want the stacks and the SysRq output as evidence", res.Hang)
				}
			}},
		{name: "a guest that dies fails", steps: floodSteps, ops: map[string]behaviour{wire.OpWrite: {die: true}}, verdict: results.Fail,
			reason: `the guest died during step "mtu" (line 9)`},
		{name: "a program the image lacks is an error", steps: "  - exec: {argv: [napilab-no-such-program]}\n", verdict: results.Error,
			reason: "napilab-no-such-program"},
		{name: "an answer that does not decode is an error", steps: floodSteps, ops: map[string]behaviour{wire.OpStop: {data: "not stats"}},
			verdict: results.Error, reason: "bad answer to stop from the agent"},
		{name: "a probe the guest cannot attach is an error", top: "inject: [{name: slow, at: veth_poll, delay: 1ms}]\n", steps: floodSteps,
			verdict: results.Error, reason: "no probes in an in-process guest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(t, inProcessScenarioWith(t, tc.top, tc.steps, tc.asserts), tc.ops)
			if res.Verdict != tc.verdict {
				t.Errorf("verdict %s %q, want %s", res.Verdict, res.Reasons, tc.verdict)
			}
			switch {
			case tc.reason == "" && len(res.Reasons) > 0:
				t.Errorf("reasons %q, want none", res.Reasons)
			case tc.reason != "" && (len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], tc.reason)):
				t.Errorf("reasons %q, want the first to contain %q", res.Reasons, tc.reason)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// runInProcess runs s end to end against an in-process guest scripted with
// ops and checks that the run folder has its result and console.log.
func runInProcess(t *testing.T, s *scenarios.Scenario, ops map[string]behaviour) *results.Result {
	t.Helper()
	cfg := Config{Scenario: s, OutDir: t.TempDir(), Logf: t.Logf, NoPolls: true, newGuest: inProcessGuest(t, ops, nil),
		setupFloor: time.Millisecond}
	res := Run(context.Background(), cfg)
	for _, f := range []string{"result.json", "console.log"} {
		if _, err := os.Stat(filepath.Join(cfg.OutDir, f)); err != nil {
			t.Errorf("the run folder lacks %s", f)
		}
	}
	return res
}

// TestGuestThatCannotStart: a guest that does not start is the host's
// problem (ERROR), and the run still writes its result.
func TestGuestThatCannotStart(t *testing.T) {
	s := inProcessScenario(t, floodSteps, "")
	dir := t.TempDir()
	res := Run(context.Background(), Config{Scenario: s, OutDir: dir, NoPolls: true, newGuest: func(*run, string) (Guest, error) {
		return nil, infra("failed to start %s", "qemu-system-x86_64: no such file")
	}})
	if res.Verdict != results.Error || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], "no such file") {
		t.Errorf("verdict %s %q, want ERROR for the guest that did not start", res.Verdict, res.Reasons)
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		t.Error(err)
	}
}

// inProcessTimeline starts an in-process guest scripted with ops, sets s's
// topology up in it and returns s's timeline against it.
func inProcessTimeline(t *testing.T, s *scenarios.Scenario, ops map[string]behaviour) (*timeline, *inProcess) {
	t.Helper()
	g := startInProcess(t, t.TempDir(), ops)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := g.ctl.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	r := &run{s: s, ctl: g.ctl, res: &results.Result{}}
	if err := r.setup(ctx); err != nil {
		t.Fatal(err)
	}
	return newTimeline(s, 1, g.ctl, nil, t.Logf), g
}

// TestInProcessTimeline runs timelines against the real agent: steps in
// order, window snapshots and samples taken, loads measured; a failing step
// stops the rest and the loads; an op the guest never answers is a hang; a
// canceled context ends the timeline and still stops the loads.
func TestInProcessTimeline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  string
		ops    map[string]behaviour
		cancel bool // cancel the run's context once the guest got a write
		check  func(t *testing.T, tl *timeline, g *inProcess, err error)
	}{
		{name: "steps, phases and snapshots", steps: floodFor("1s"), check: func(t *testing.T, tl *timeline, g *inProcess, err error) {
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, st := range tl.steps {
				names = append(names, st.Name)
			}
			if got := strings.Join(names, ", "); got != "mtu, start flood, flooding, stop flood" {
				t.Errorf("steps %s", got)
			}
			if e := edgeHosts(tl); len(e) != 2 || e[1]-e[0] < 1 {
				t.Errorf("edge snapshots at %v, want two around flooding", e)
			}
			if tl.final <= 0 {
				t.Error("no final snapshot")
			}
			if l := tl.loadResults(); len(l) != 1 || l[0].Sent == 0 || l[0].Received == 0 {
				t.Errorf("loads %+v, want the flood sent and received", l)
			}
			a := tl.s.Evaluate(tl.record(), tl.s.Asserts[1])
			if !a.Passed {
				t.Errorf("%s: %s, want passed", a.Name, a.Measured)
			}
		}},
		{name: "a failing step stops the rest", steps: `  - start: [flood]
  - {name: bad mtu, write: {path: /sys/class/net/vrx/mtu, value: "-1"}}
  - {name: never, sleep: 1s}
`, check: func(t *testing.T, tl *timeline, g *inProcess, err error) {
			var se *stepError
			var ge *guestError
			if !errors.As(err, &se) || se.step != "bad mtu" || !errors.As(err, &ge) || !ge.kernelRefused() || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("error %v, want step bad mtu refused with EINVAL", err)
			}
			if n := len(tl.steps); n != 2 {
				t.Errorf("%d steps ran, want 2", n)
			}
			if n := g.script.count(wire.OpStop); n != 2 {
				t.Errorf("%d stops, want the flood's sender and sink stopped", n)
			}
		}},
		{name: "an op that never answers is a hang", steps: "  - {name: bounce, link: {dev: vrx, state: down}, deadline: 200ms}\n",
			ops: map[string]behaviour{wire.OpLink: {silent: true}}, check: func(t *testing.T, tl *timeline, g *inProcess, err error) {
				var h *hangError
				if !errors.As(err, &h) || h.step != "bounce" || h.deadline != 200*time.Millisecond {
					t.Errorf("error %v, want a hang of bounce after 200ms", err)
				}
			}},
		{name: "a canceled context ends the timeline", steps: "  - start: [flood]\n" + `  - {name: mtu, write: {path: /sys/class/net/vrx/mtu, value: "1400"}}
  - {name: long, sleep: 1m}
`, cancel: true,
			check: func(t *testing.T, tl *timeline, g *inProcess, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want canceled", err)
				}
				if n := g.script.count(wire.OpStop); n != 2 {
					t.Errorf("%d stops, want the flood's sender and sink stopped", n)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asserts := ""
			if strings.Contains(tc.steps, "flooding") {
				asserts = whileFlooding("10")
			}
			tl, g := inProcessTimeline(t, inProcessScenario(t, tc.steps, asserts), tc.ops)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					for g.script.count(wire.OpWrite) == 0 {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
			}
			tc.check(t, tl, g, runWithin(t, tl, ctx, 30*time.Second))
		})
	}
}
