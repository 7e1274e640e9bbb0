// Package procgroup runs a child as the leader of a process group of its
// own and kills the whole group: the child and whatever it started that
// stayed in the group (make's compilers, a shell's background jobs).
//
//	cmd := exec.CommandContext(ctx, "make", "-j2")
//	procgroup.Set(cmd, procgroup.KillOnCancel(10*time.Second))
//	err := procgroup.Run(cmd) // the end of ctx kills the group
//
// It is a leaf: it imports nothing of napilab.
package procgroup

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Option changes how Set prepares a command.
type Option func(*exec.Cmd)

// KillOnCancel makes the end of the context of a command made by
// exec.CommandContext kill its whole group, not the leader only; Wait then
// waits at most waitDelay for the output pipes a killed child held.
func KillOnCancel(waitDelay time.Duration) Option {
	return func(cmd *exec.Cmd) {
		cmd.Cancel = func() error { return Kill(cmd) }
		cmd.WaitDelay = waitDelay
	}
}

// WithoutPdeathsig leaves out the SIGKILL on the death of the starting
// thread, for a child forked from a thread that may exit first (a locked
// thread entered into another network namespace, retired afterwards).
func WithoutPdeathsig() Option {
	return func(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = 0 }
}

// Set makes cmd, before it starts, the leader of a new process group
// (Setpgid), which Kill kills whole, and makes the kernel send it SIGKILL
// when the thread that started it exits (Pdeathsig), so that it does not
// outlive lab. Fields of cmd.SysProcAttr already set are kept.
func Set(cmd *exec.Cmd, opts ...Option) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	for _, o := range opts {
		o(cmd)
	}
}

// Start starts cmd (prepared by Set) from an OS thread that a goroutine
// holds locked until cmd has exited. Pdeathsig follows the thread that
// forked the child, not lab: a child forked from any thread of the Go
// runtime is killed when another goroutine later locks that thread and
// exits locked, as the sandbox's build steps and a failed netns switch do
// (the runtime then retires the thread). Beside a build that SIGKILLed
// QEMU at random; a held thread cannot be taken. The hold ends when the
// child exits, before it is reaped: Wait, from any goroutine, and reading
// its pipes are the caller's as with cmd.Start.
func Start(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		awaitExit(cmd)
	}()
	return <-started
}

// Run is Start then cmd.Wait.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Kill sends SIGKILL to the started cmd's process group, or to cmd alone
// when it leads none (Setpgid turned off, as for a child that must stay in
// the terminal's foreground group). Call it before Wait has reaped cmd: a
// reaped leader's pid, the group's id, may be reused.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		return cmd.Process.Kill()
	}
	return unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
}

// KillStragglers blocks until the started cmd has exited, then kills what
// is left of its group (stragglers would hold its output pipes open
// forever), before cmd is reaped: until the caller's Wait reaps it, its
// pid, the group's id, cannot be reused.
func KillStragglers(cmd *exec.Cmd) {
	awaitExit(cmd)
	_ = Kill(cmd)
}

// awaitExit blocks until the started cmd has exited, leaving it unreaped
// (WNOWAIT): its pid stays its own until the caller's Wait.
func awaitExit(cmd *exec.Cmd) {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
}
