package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/runner/vm"
)

// fakeVM is a QEMU that has run: its console holds log, and it has exited
// or still runs (a sleep posing as QEMU).
func fakeVM(t *testing.T, log string, exited bool) *qemuGuest {
	t.Helper()
	if exited {
		return fakeVMEnded(t, log, "true")
	}
	return fakeVMRun(t, log, false, "exec sleep 30")
}

// fakeVMEnded is a QEMU that has ended as the shell command sh did: "true"
// (a clean exit), "exit 1", "kill -KILL $$" (the OOM killer).
func fakeVMEnded(t *testing.T, log, sh string) *qemuGuest {
	t.Helper()
	return fakeVMRun(t, log, true, sh)
}

// fakeVMRun is a QEMU that runs the shell script sh; exited waits for it to
// end.
func fakeVMRun(t *testing.T, log string, exited bool, sh string) *qemuGuest {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "qemu")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+sh+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := &qemuGuest{console: newConsole(io.Discard)}
	g.console.copy(strings.NewReader(log))
	q := &vm.QEMU{Binary: fake, Accel: "tcg", CPUs: 1, MemoryMB: 64, Kernel: "bzImage", Initrd: "initrd", AsCaller: true}
	v, err := q.Start(func(r io.Reader) { io.Copy(io.Discard, r) })
	if err != nil {
		t.Fatal(err)
	}
	g.vm = v
	if exited {
		<-v.Done()
	}
	t.Cleanup(func() { v.Stop(0) })
	return g
}

const warnLog = "[    1.000000] Linux version 6.1\n" +
	"[   23.412350] WARNING: CPU: 1 PID: 312 at net/core/dev.c:6402 napi_disable+0xb4/0xd0\n" +
	"[   23.414501] RIP: 0010:napi_disable+0xb4/0xd0\n" +
	"[   23.431002] ---[ end trace 0000000000000000 ]---\n"

// TestVerdictTable checks which evidence gives PASS, FAIL and ERROR: FAIL
// only when the kernel is implicated, ERROR for every other failure.
func TestVerdictTable(t *testing.T) {
	refused := &guestError{Op: wire.OpWrite, Kind: wire.KindErrno, Errno: syscall.EINVAL, Msg: "write \"1\" to /sys/x: invalid argument"}
	noProgram := &guestError{Op: wire.OpExec, Kind: wire.KindAgent, Msg: `no such program "ethtool" in the guest image`}
	killed := &guestError{Op: wire.OpExec, Kind: wire.KindTimeout, Msg: "exec sleep: killed after 10m0s"}
	oldAgent := &guestError{Op: wire.OpWrite, Msg: "write: invalid argument"} // no kind: not trusted as an errno
	step := func(err error) error { return &stepError{step: "flip", line: 9, err: err} }
	hang := func(f hangFacts) error {
		return &hangError{step: "flip", line: 9, deadline: 10 * time.Second, facts: f}
	}
	// QEMU's CPU over a 10 s step: fed (a busy vCPU on a quiet host), or
	// starved (beside spinning processes; see starvedRan).
	fed := hostShare{wall: 10 * time.Second, ran: 9500 * time.Millisecond, waited: 300 * time.Millisecond, measured: true}
	starved := hostShare{wall: 10 * time.Second, ran: 1900 * time.Millisecond, waited: 8 * time.Second, measured: true}
	idle := hostShare{wall: 10 * time.Second, ran: 20 * time.Millisecond, measured: true}
	unmeasured := hostShare{wall: 10 * time.Second}
	inD := "init (pid 1) in D state"
	for _, tc := range []struct {
		name    string
		err     error
		console string // "" = no VM
		exited  bool
		ended   string // how QEMU ended (fakeVMEnded), "" = exited's way
		ks      []results.Kselftest
		verdict results.Verdict
		reason  string // a part of the first reason
	}{
		{name: "nothing wrong", console: "Linux version 6.1\n", verdict: results.Pass},
		{name: "a splat", console: warnLog, verdict: results.Fail, reason: "WARNING in napi_disable"},
		{name: "a deadline miss, no evidence gathered", err: &hangError{step: "flip", line: 9, deadline: time.Second}, console: "x\n",
			verdict: results.Error, reason: "nothing implicates the kernel"},
		{name: "a deadline miss on a starved host", err: hang(hangFacts{share: starved, gathered: true, running: true, answered: true, blocked: inD}),
			console: "x\n", verdict: results.Error, reason: "the host starved the guest: QEMU got 1.90 s of CPU in 10.00 s"},
		{name: "a hang, SysRq shows the task blocked in the kernel", err: hang(hangFacts{share: fed, gathered: true, running: true, answered: true, blocked: inD}),
			console: "x\n", verdict: results.Fail, reason: "did not finish within 10s"},
		{name: "a hang, a halted guest's task blocked", err: hang(hangFacts{share: idle, gathered: true, running: true, answered: true, blocked: inD}),
			console: "x\n", verdict: results.Fail, reason: "did not finish within 10s"},
		{name: "a hang, CPU not measured, the task blocked", err: hang(hangFacts{share: unmeasured, gathered: true, running: true, answered: true, blocked: inD}),
			console: "x\n", verdict: results.Fail, reason: "did not finish within 10s"},
		{name: "a hang, the agent's thread looping in the kernel", err: hang(hangFacts{share: fed, gathered: true, running: true, answered: true,
			looping: "init (pid 1) running in usleep_range_state"}), console: "x\n", verdict: results.Fail, reason: "did not finish within 10s"},
		{name: "a hang, the guest silent while QEMU ran and was fed", err: hang(hangFacts{share: fed, gathered: true, running: true}),
			console: "x\n", verdict: results.Fail, reason: "the guest stopped answering while QEMU ran and got the CPU it asked for"},
		{name: "a silent guest on a starved host", err: hang(hangFacts{share: starved, gathered: true, running: true}),
			console: "x\n", verdict: results.Error, reason: "the host starved the guest"},
		{name: "a silent guest, CPU not measured", err: hang(hangFacts{share: unmeasured, gathered: true, running: true}),
			console: "x\n", verdict: results.Error, reason: "a starved host cannot be told apart"},
		{name: "a deadline miss, the guest answers, nothing stuck", err: hang(hangFacts{share: fed, gathered: true, running: true, answered: true}),
			console: "x\n", verdict: results.Error, reason: "nothing implicates the kernel"},
		{name: "a deadline miss, QEMU killed meanwhile", err: hang(hangFacts{share: fed, gathered: true}), console: "x\n", ended: "kill -KILL $$",
			verdict: results.Error, reason: "QEMU was killed by SIGKILL"},
		{name: "a deadline miss beside a splat", err: hang(hangFacts{share: starved, gathered: true, running: true}), console: warnLog,
			verdict: results.Fail, reason: "the host starved the guest"},
		{name: "an operation the kernel refused", err: step(refused), console: "x\n", verdict: results.Fail, reason: "invalid argument"},
		{name: "setup refused", err: fmt.Errorf("topology setup failed: %w", refused), console: "x\n", verdict: results.Fail, reason: "topology setup failed"},
		{name: "a program that exited non-zero", err: step(&exitError{argv0: "ip", code: 2, tail: "RTNETLINK answers: File exists"}), console: "x\n",
			verdict: results.Fail, reason: "ip exited 2"},
		{name: "a wait that did not hold", err: step(&waitError{timeout: time.Second, last: "0 napi/* threads"}), console: "x\n",
			verdict: results.Fail, reason: "condition not met"},
		{name: "a sched step that found too few tasks", err: step(&tooFewError{task: "napi/", want: 1}), console: "x\n",
			verdict: results.Fail, reason: "0 tasks named napi/* changed, want at least 1"},
		{name: "the guest died", err: step(errAgentGone), console: "x\n", exited: true, verdict: results.Fail, reason: "the guest died during step"},
		{name: "QEMU killed by SIGKILL", err: step(errAgentGone), console: "x\n", ended: "kill -KILL $$", verdict: results.Error,
			reason: `the guest ended during step "flip" (line 9): QEMU was killed by SIGKILL`},
		{name: "QEMU killed by its seccomp filter", err: step(errAgentGone), console: "x\n", ended: "kill -SYS $$", verdict: results.Error,
			reason: "QEMU was killed by SIGSYS (its seccomp sandbox"},
		{name: "QEMU exited with an error status", err: step(errAgentGone), console: "x\n", ended: "echo 'qemu: out of memory' >&2; exit 1",
			verdict: results.Error, reason: "QEMU exited with status 1"},
		{name: "QEMU killed after the guest panicked", err: step(errAgentGone), ended: "kill -KILL $$",
			console: "[    9.1] Kernel panic - not syncing: Fatal exception in interrupt\n", verdict: results.Fail, reason: "the guest panicked"},
		{name: "a boot that started and died", err: &bootError{"the guest stopped before the agent was ready"}, console: "Linux version 6.1\n", exited: true,
			verdict: results.Fail, reason: "the kernel did not boot"},
		{name: "a failed kselftest", console: "x\n", ks: []results.Kselftest{{Name: "net:veth.sh", Status: results.KFail}}, verdict: results.Fail, reason: "veth.sh"},
		{name: "the agent hung up, the guest runs", err: step(errAgentGone), console: "x\n", verdict: results.Error, reason: "connection closed"},
		{name: "no such program", err: step(noProgram), console: "x\n", verdict: results.Error, reason: "no such program"},
		{name: "the agent's own timeout", err: step(killed), console: "x\n", verdict: results.Error, reason: "killed after"},
		{name: "an error without a kind", err: step(oldAgent), console: "x\n", verdict: results.Error, reason: "invalid argument"},
		{name: "a send failure", err: step(fmt.Errorf("failed to send write to the agent: %w", io.ErrClosedPipe)), console: "x\n",
			verdict: results.Error, reason: "failed to send"},
		{name: "a decode failure", err: step(fmt.Errorf("bad answer to stop from the agent: %w", errors.New("json: cannot unmarshal"))), console: "x\n",
			verdict: results.Error, reason: "bad answer"},
		{name: "an unclassified error", err: step(errors.New("load a is not running")), console: "x\n", verdict: results.Error, reason: "not running"},
		{name: "a context error", err: step(context.DeadlineExceeded), console: "x\n", verdict: results.Error, reason: "deadline exceeded"},
		{name: "a lab fault beside a splat", err: step(noProgram), console: warnLog, verdict: results.Fail, reason: "no such program"},
		{name: "an infrastructure error", err: infra("qemu failed: exit status 1"), verdict: results.Error, reason: "qemu failed"},
		{name: "an infrastructure error hides no splat check", err: infra("interrupted: context canceled"), console: warnLog,
			verdict: results.Error, reason: "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := windowScenario(t, "")
			r := &run{cfg: Config{OutDir: t.TempDir()}, s: s, res: &results.Result{}}
			switch {
			case tc.ended != "":
				r.guest = fakeVMEnded(t, tc.console, tc.ended)
			case tc.console != "":
				r.guest = fakeVM(t, tc.console, tc.exited)
			}
			if tc.ks != nil {
				r.tl = windowTimeline(s)
				r.tl.ks.results = tc.ks
			}
			r.finish(tc.err)
			if r.res.Verdict != tc.verdict {
				t.Errorf("verdict %s (%q), want %s", r.res.Verdict, r.res.Reasons, tc.verdict)
			}
			if tc.reason != "" && (len(r.res.Reasons) == 0 || !strings.Contains(r.res.Reasons[0], tc.reason)) {
				t.Errorf("reasons %q, want the first to contain %q", r.res.Reasons, tc.reason)
			}
			if tc.reason == "" && len(r.res.Reasons) > 0 {
				t.Errorf("reasons %q, want none", r.res.Reasons)
			}
		})
	}
}
