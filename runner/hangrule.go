package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"syscall"
	"time"

	"napilab/internal/wire"
	"napilab/results/splat"
)

// hangFacts is what the lab saw of a guest whose step (or setup call)
// missed its deadline, gathered by hangEvidence.
type hangFacts struct {
	share    hostShare // QEMU's CPU use from the call's start to its deadline
	gathered bool      // hangEvidence ran (false: only the deadline is known)
	running  bool      // QEMU still ran after the deadline
	answered bool      // the agent answered for its tasks' stacks
	blocked  string    // a guest task in D state (the agent's stacks or SysRq-w), "" = none
	looping  string    // an agent thread running inside the kernel, "" = none
	// still, when the host starved the guest, is the evidence that held
	// again once QEMU had more CPU (recheckStarved), "" = none or not
	// rechecked; more names what QEMU got meanwhile.
	still, more string
}

// judgeHang is the one rule for a deadline miss: FAIL only on evidence
// that implicates the kernel, ERROR otherwise. In order:
//
//  1. QEMU ended: judged as a guest that died (guestEnd).
//  2. The host starved the guest (hostShare.starved: QEMU ran under half
//     a CPU while its threads waited for one at least as long as they ran
//     and at least a quarter of the window): ERROR. At one instant a
//     starved guest's slow step and a hung one look alike, stacks and all;
//     but a task still stuck the same way after QEMU got recheckCPU more
//     CPU (recheckStarved) is the kernel's: FAIL.
//  3. A guest task blocked in D state (the agent's stacks, or SysRq-w on
//     the console) or an agent thread caught running inside the kernel (a
//     usleep loop): FAIL.
//  4. The agent answered nothing while QEMU ran and was measured to get the
//     CPU it asked for: FAIL, the guest stopped answering.
//  5. Anything else (the agent answers and nothing is stuck in the kernel,
//     or the CPU use could not be measured): ERROR, no evidence.
//
// A splat is judged on its own (run.splats): it fails the run whatever
// this rule says. The hang's reason is returned with kernel=true for FAIL.
func (r *run) judgeHang(h *hangError) (reason string, kernel bool) {
	// A FAIL names where the stuck task sleeps; an ERROR does not call
	// it hung.
	base, failBase := h.Error(), h.Error()
	if r.res.Hang != nil {
		failBase = hangReason(r.res.Hang)
	}
	f := h.facts
	switch {
	case f.gathered && !f.running && r.guest != nil:
		why, kernel := r.guestEnd()
		if kernel {
			return failBase + ": " + why, true
		}
		return base + ": " + why, false
	case f.share.starved() && f.still != "":
		return fmt.Sprintf("%s (the host starved the guest: %s; %s still after %s)", failBase, f.share, f.still, f.more), true
	case f.share.starved():
		return fmt.Sprintf("%s: the host starved the guest: %s", base, f.share), false
	case f.blocked != "", f.looping != "":
		return failBase, true
	case f.gathered && !f.answered && f.share.measured:
		return fmt.Sprintf("%s: the guest stopped answering while QEMU ran and got the CPU it asked for (%s)", failBase, f.share), true
	case !f.gathered:
		return base + ": no evidence gathered, nothing implicates the kernel", false
	case !f.answered:
		return fmt.Sprintf("%s: the guest stopped answering, and %s: a starved host cannot be told apart", base, f.share), false
	}
	return fmt.Sprintf("%s: no guest task blocked or looping in the kernel, no splat (%s): nothing implicates the kernel", base, f.share), false
}

// Rechecking evidence taken while the host starved the guest: the stacks
// are read again once QEMU has run recheckCPU more (a step's default
// deadline of CPU), or after recheckWall.
// Variables for the tests.
var (
	recheckCPU  = 10 * time.Second
	recheckWall = 60 * time.Second
)

// recheckStarved waits until QEMU has had recheckCPU more CPU (or
// recheckWall passed), reads the guest's stacks again and returns the
// stuck task that was stuck in the first reading too ("" = none: the
// step was slow, not hung) and what QEMU got meanwhile.
func (r *run) recheckStarved(ctx context.Context, first []wire.TaskStack) (still, more string) {
	ctx, cancel := cleanupCtx(ctx, recheckWall+evidenceTimeout)
	defer cancel()
	from, err := r.guest.cpuUse()
	if err != nil {
		return "", ""
	}
	began := time.Now()
	var ran time.Duration
	for ran < recheckCPU && time.Since(began) < recheckWall && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		now, err := r.guest.cpuUse()
		if err != nil {
			return "", ""
		}
		ran, _ = now.Since(from)
	}
	more = fmt.Sprintf("QEMU got %.2f s more CPU in %.2f s", ran.Seconds(), time.Since(began).Seconds())
	if ran < recheckCPU {
		return "", more // still starved: nothing more is known
	}
	var tasks []wire.TaskStack
	if err := r.ctl.call(ctx, wire.OpStacks, nil, &tasks); err != nil {
		return "", more
	}
	was := stuckTasks(first)
	for _, t := range tasks {
		if id := stuckTask(t); id != "" && was[id] {
			return id, more
		}
	}
	return "", more
}

// stuckTask names t when it is stuck in the kernel (D state, or an agent
// thread running in the kernel outside the Go runtime's waits), "" if not.
// A thread in napi_disable's usleep loop shows either way.
func stuckTask(t wire.TaskStack) string {
	if t.State == "D" || loopingFrame(t) != "" {
		return fmt.Sprintf("%s (pid %d) stuck in the kernel", t.Comm, t.PID)
	}
	return ""
}

// stuckTasks is the set of stuck tasks among tasks.
func stuckTasks(tasks []wire.TaskStack) map[string]bool {
	out := map[string]bool{}
	for _, t := range tasks {
		if id := stuckTask(t); id != "" {
			out[id] = true
		}
	}
	return out
}

// sysrqBlocked matches a task in SysRq-w's dump (show_state_filter:
// "task:kworker/0:1 state:D stack:0 pid:12 ...").
var sysrqBlocked = regexp.MustCompile(`task:(\S+)\s+state:D\b`)

// blockedTask names a task in D state: from the agent's stacks, else from
// SysRq-w's dump in the console text after the deadline; "" = none.
func blockedTask(tasks []wire.TaskStack, console string) string {
	for _, t := range tasks {
		if t.State == "D" {
			return fmt.Sprintf("%s (pid %d) in D state", t.Comm, t.PID)
		}
	}
	if m := sysrqBlocked.FindStringSubmatch(console); m != nil {
		return m[1] + " in D state (SysRq-w)"
	}
	return ""
}

// loopingAgent names an agent thread caught runnable inside the kernel
// (not in the Go runtime's own waits); "" = none.
func loopingAgent(tasks []wire.TaskStack) string {
	for _, t := range tasks {
		if f := loopingFrame(t); f != "" {
			return fmt.Sprintf("%s (pid %d) running in %s", t.Comm, t.PID, f)
		}
	}
	return ""
}

// loopingFrame is the kernel function an agent thread t was caught running
// in (runnable, not in the Go runtime's own waits), "" if none.
func loopingFrame(t wire.TaskStack) string {
	if t.Comm != agentComm || t.State != "R" || goRuntimeWait.MatchString(t.Stack) {
		return ""
	}
	return splat.StackFrame(t.Stack)
}

// hostSignal matches QEMU's word when a signal from the host ended it.
var hostSignal = regexp.MustCompile(`terminating on signal \d+(?: from pid \d+(?: \([^)]*\))?)?`)

// guestPanic matches the kernel's panic line on the console.
var guestPanic = regexp.MustCompile(`Kernel panic - not syncing: ?(.*)`)

// guestEnd says whose fault an ended guest is. It died (the kernel's
// fault) only when QEMU exited cleanly, as it does on the guest's request
// (a poweroff, or a panic under panic=-1 with -no-reboot), or the console
// shows the guest's panic. QEMU killed by a signal (the OOM killer, its own
// seccomp filter) or exiting with an error status is the host's: ERROR.
func (r *run) guestEnd() (reason string, kernel bool) {
	waitErr, said := r.guest.exitStatus()
	if m := hostSignal.FindString(said); m != "" {
		// QEMU exits 0 on SIGTERM, SIGINT and SIGHUP, saying so.
		return "QEMU was ended from the host (qemu said: " + m + ")", false
	}
	if waitErr == nil {
		return "QEMU exited cleanly (the guest powered off, reset or panicked)", true
	}
	if m := guestPanic.FindStringSubmatch(string(r.guest.output().text())); m != nil {
		return fmt.Sprintf("the guest panicked (%s) and QEMU %s", m[0], qemuExit(waitErr)), true
	}
	reason = "QEMU " + qemuExit(waitErr)
	if said != "" {
		reason += "; qemu said: " + said
	}
	return reason, false
}

// qemuExit names how QEMU ended: a signal (with its usual senders) or an
// error status.
func qemuExit(err error) string {
	var xe *exec.ExitError
	if !errors.As(err, &xe) {
		return "failed: " + err.Error()
	}
	ws, ok := xe.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return "was killed by SIGKILL (the OOM killer, or a kill from the host)"
	case ok && ws.Signaled() && ws.Signal() == syscall.SIGSYS:
		return "was killed by SIGSYS (its seccomp sandbox refused a system call)"
	case ok && ws.Signaled():
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", xe.ExitCode())
}
