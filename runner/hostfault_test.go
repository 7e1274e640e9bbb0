package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

// Host faults and unbounded guest totals, each through the code a run
// takes: a deadline miss nothing pins on the kernel, QEMU killed by a
// signal, a probe registration that never returns, a guest that floods its
// samples, QEMU flooding its stderr, a result that could not be saved.

// TestQEMUKilledIsNoGuestDeath: the agent's channel closing because QEMU
// was killed (the OOM killer's SIGKILL, the seccomp filter's SIGSYS) or
// exited with an error status is the host's fault; only a clean exit, on
// the guest's request, is a guest that died.
func TestQEMUKilledIsNoGuestDeath(t *testing.T) {
	for _, tc := range []struct {
		name, sh string
		verdict  results.Verdict
		reason   string
	}{
		{name: "clean exit", sh: "true", verdict: results.Fail, reason: "the guest died"},
		{name: "SIGKILL", sh: "kill -KILL $$", verdict: results.Error, reason: "SIGKILL"},
		{name: "SIGSYS", sh: "kill -SYS $$", verdict: results.Error, reason: "SIGSYS"},
		{name: "error status", sh: "exit 1", verdict: results.Error, reason: "status 1"},
		// QEMU exits 0 on SIGTERM, saying so (checked on QEMU 7.2).
		{name: "SIGTERM", sh: "echo 'qemu-system-x86_64: terminating on signal 15 from pid 4242 (kill)' >&2; exit 0",
			verdict: results.Error, reason: "ended from the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{cfg: Config{OutDir: t.TempDir()}, s: windowScenario(t, ""), res: &results.Result{}, guest: fakeVMEnded(t, "[    1.0] Linux version 6.1\n", tc.sh)}
			r.finish(&stepError{step: "flip", line: 9, err: errAgentGone})
			if r.res.Verdict != tc.verdict || len(r.res.Reasons) == 0 || !strings.Contains(r.res.Reasons[0], tc.reason) {
				t.Errorf("verdict %s %q, want %s naming %q", r.res.Verdict, r.res.Reasons, tc.verdict, tc.reason)
			}
		})
	}
}

// idleAgent is a stacks answer from a guest with nothing stuck: the agent's
// threads wait in the Go runtime.
var idleAgent = []wire.TaskStack{{PID: 1, Comm: agentComm, State: "R",
	Stack: "[<0>] futex_wait_queue+0x60/0x90\n[<0>] futex_wait+0x175/0x260\n[<0>] do_futex+0x123/0x1c0\n"}}

// TestDeadlineMissWithoutEvidence: a step past its deadline while the guest
// answers and no task is blocked or looping in the kernel is not the
// kernel's (ERROR), where the same miss with the agent's thread blocked in
// napi_disable is (FAIL).
func TestDeadlineMissWithoutEvidence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stacks  []wire.TaskStack
		verdict results.Verdict
		reason  string
	}{
		{name: "nothing stuck", stacks: idleAgent, verdict: results.Error, reason: "nothing implicates the kernel"},
		{name: "blocked in the kernel", stacks: blockedAgent, verdict: results.Fail, reason: "hung in napi_disable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInProcess(t, inProcessScenario(t, "  - {name: bounce, link: {dev: vrx, state: down}, deadline: 300ms}\n", ""),
				map[string]behaviour{wire.OpLink: {silent: true}, wire.OpStacks: {data: tc.stacks}})
			if res.Verdict != tc.verdict || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], tc.reason) {
				t.Errorf("verdict %s %q, want %s naming %q", res.Verdict, res.Reasons, tc.verdict, tc.reason)
			}
		})
	}
}

// TestInjectHasADeadline: a kernel that never returns from registering the
// probes does not hang the run; the miss is judged on its evidence.
func TestInjectHasADeadline(t *testing.T) {
	s := inProcessScenarioWith(t, "inject: [{name: slow, at: veth_poll, delay: 1ms}]\n", floodSteps, "")
	done := make(chan *results.Result, 1)
	go func() {
		done <- runInProcess(t, s, map[string]behaviour{wire.OpInject: {silent: true}, wire.OpStacks: {data: blockedAgent}})
	}()
	var res *results.Result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end: the probes' registration has no deadline")
	}
	if res.Verdict != results.Fail || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], "did not finish") {
		t.Errorf("verdict %s %q, want FAIL for a registration stuck in napi_disable", res.Verdict, res.Reasons)
	}
}

// TestSamplesBounded: a guest that answers every sample with megabytes
// fills neither the host's memory nor samples.jsonl past 64 MiB
// (results.MaxSamplesFile).
func TestSamplesBounded(t *testing.T) {
	const limit = 64 << 20
	big := strings.Repeat("x", 4<<20-64<<10)     // just under wire.MaxLine
	values := map[string]string{"softirqs": big} // every group gets this answer
	tl, _ := fakeTimeline(t, fakeTopology+`samplers:
  - {source: softirqs, every: 10ms}
  - {source: softnet_stat, every: 10ms}
  - {source: interrupts, every: 10ms}
timeline:
  - sleep: 5s
`, map[string]behaviour{wire.OpSample: {data: wire.Sample{Values: values}}})
	if err := runWithin(t, tl, context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	var kept int64
	for i := range tl.samples {
		b, _ := json.Marshal(&tl.samples[i])
		kept += int64(len(b)) + 1
	}
	t.Logf("%d samples, %d bytes kept", len(tl.samples), kept)
	if kept > limit {
		t.Errorf("%d bytes of samples kept in memory, want at most %d", kept, limit)
	}
	path := filepath.Join(t.TempDir(), "samples.jsonl")
	tl.writeSamples(path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > limit {
		t.Errorf("samples.jsonl is %d bytes, want at most %d", fi.Size(), limit)
	}
}

// TestResultAgreesWithVerdict: a run whose reports cannot be written ends
// ERROR, and its result.json says so.
func TestResultAgreesWithVerdict(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "junit.xml"), 0o755); err != nil { // junit.xml cannot be written
		t.Fatal(err)
	}
	s := inProcessScenario(t, "  - {name: nap, sleep: 100ms}\n", "")
	res := Run(context.Background(), Config{Scenario: s, OutDir: dir, Logf: t.Logf, NoPolls: true, newGuest: inProcessGuest(t, nil, nil)})
	if res.Verdict != results.Error {
		t.Errorf("verdict %s %q, want ERROR: junit.xml could not be written", res.Verdict, res.Reasons)
	}
	saved, err := results.Read(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if saved.Verdict != res.Verdict {
		t.Errorf("result.json says %s, the run returned %s", saved.Verdict, res.Verdict)
	}
}

// TestSamplesWriteFailureIsError: a run whose samples.jsonl could not be
// written did not keep its evidence: ERROR, naming it.
func TestSamplesWriteFailureIsError(t *testing.T) {
	s := windowScenario(t, "")
	r := &run{cfg: Config{OutDir: filepath.Join(t.TempDir(), "gone")}, s: s, res: &results.Result{}, tl: windowTimeline(s)}
	r.finish(nil)
	if r.res.Verdict != results.Error || len(r.res.Reasons) == 0 || !strings.Contains(r.res.Reasons[0], "samples") {
		t.Errorf("verdict %s %q, want ERROR: samples.jsonl could not be written", r.res.Verdict, r.res.Reasons)
	}
}

// TestSetupLimitFloor: setup calls get three step deadlines, but never less
// than minSetupLimit (a debug kernel registers a probe in over 15 s).
func TestSetupLimitFloor(t *testing.T) {
	s := inProcessScenario(t, floodSteps, "") // defaults.deadline 2s
	if got := (&run{s: s}).setupLimit(); got != minSetupLimit {
		t.Errorf("setup limit %v with 2s deadlines, want the floor %v", got, minSetupLimit)
	}
	s.Defaults.Deadline = scenarios.Duration(time.Minute)
	if got := (&run{s: s}).setupLimit(); got != 3*time.Minute {
		t.Errorf("setup limit %v with 1m deadlines, want 3m", got)
	}
}
