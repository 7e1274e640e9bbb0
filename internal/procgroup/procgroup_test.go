package procgroup

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain makes the test a child subreaper: a killed child's own child is
// then reparented here, and its wait status says whether SIGKILL ended it
// or it ran its 30 s.
func TestMain(m *testing.M) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// family is a `sleep 30` child, made by cmdFor, and its own `sleep 30`.
const family = "sleep 30 & echo $!; exec sleep 30"

// startFamily starts cmd (running a script that prints its child's pid
// first) with stdout on a pipe, as lab's builds run, and returns that pid
// and the pipe's read end, at EOF once every holder has exited.
func startFamily(t *testing.T, cmd *exec.Cmd) (int, *bufio.Reader) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	cmd.Stdout = pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(pr)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the grandchild's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid, r
}

// reapOrphan waits for pid, reparented to the test, and reports whether
// SIGKILL ended it.
func reapOrphan(t *testing.T, pid int) bool {
	t.Helper()
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("wait for %d: %v", pid, err)
		}
		return ws.Signaled() && ws.Signal() == unix.SIGKILL
	}
}

// killedBySIGKILL reports whether cmd, waited for, ended on SIGKILL.
func killedBySIGKILL(cmd *exec.Cmd) bool {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func TestKill(t *testing.T) {
	tests := []struct {
		name string
		// leader turns Setpgid off: cmd stays in the test's group.
		leaderOnly bool
	}{
		{"group: child and its child", false},
		{"no group of its own: the child only", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", family)
			Set(cmd)
			if tc.leaderOnly {
				cmd.SysProcAttr.Setpgid = false
			}
			grandchild, _ := startFamily(t, cmd)
			if err := Kill(cmd); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if !killedBySIGKILL(cmd) {
				t.Errorf("child: %v, want killed", cmd.ProcessState)
			}
			if tc.leaderOnly {
				// Still running its sleep: its group was not signalled.
				if err := unix.Kill(grandchild, 0); err != nil {
					t.Errorf("grandchild gone (%v), want it left alone", err)
				}
				unix.Kill(grandchild, unix.SIGKILL)
				reapOrphan(t, grandchild)
				return
			}
			if !reapOrphan(t, grandchild) {
				t.Errorf("grandchild was not killed: it ran its sleep")
			}
		})
	}
}

func TestKillOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", family)
	Set(cmd, KillOnCancel(5*time.Second))
	grandchild, out := startFamily(t, cmd)
	cancel()
	err := cmd.Wait()
	if err == nil || !killedBySIGKILL(cmd) {
		t.Errorf("Wait = %v (%v), want the child killed", err, cmd.ProcessState)
	}
	if !reapOrphan(t, grandchild) {
		t.Errorf("grandchild was not killed: it ran its sleep")
	}
	if rest, err := io.ReadAll(out); err != nil || len(rest) != 0 {
		t.Errorf("output after the pid: %q, %v", rest, err)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := exec.CommandContext(ctx, "sleep", "30")
	Set(cmd, KillOnCancel(time.Second))
	if err := cmd.Start(); err == nil {
		cmd.Wait()
		t.Fatal("Start with a cancelled context succeeded")
	}
	if cmd.Process != nil {
		t.Errorf("a process was started: %d", cmd.Process.Pid)
	}
	if err := Kill(cmd); err != nil {
		t.Errorf("Kill of a command never started = %v, want nil", err)
	}
}

func TestKillStragglers(t *testing.T) {
	// The child exits at once; its own child holds stdout.
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!")
	Set(cmd)
	grandchild, out := startFamily(t, cmd)
	KillStragglers(cmd)
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v, want a clean exit", err)
	}
	if !reapOrphan(t, grandchild) {
		t.Errorf("straggler was not killed: it ran its sleep")
	}
	// Every holder gone: the pipe is at its end.
	if rest, err := io.ReadAll(out); err != nil || len(rest) != 0 {
		t.Errorf("output after the pid: %q, %v", rest, err)
	}
}

func TestSet(t *testing.T) {
	cred := &syscall.Credential{Uid: 65534}
	tests := []struct {
		name      string
		attr      *syscall.SysProcAttr
		opts      []Option
		pdeathsig syscall.Signal
		cancel    bool
	}{
		{"defaults", nil, nil, syscall.SIGKILL, false},
		{"fields kept", &syscall.SysProcAttr{Credential: cred}, nil, syscall.SIGKILL, false},
		{"without Pdeathsig", nil, []Option{WithoutPdeathsig()}, 0, false},
		{"kill on cancel", nil, []Option{KillOnCancel(3 * time.Second)}, syscall.SIGKILL, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(context.Background(), "true")
			cmd.SysProcAttr = tc.attr
			Set(cmd, tc.opts...)
			a := cmd.SysProcAttr
			if !a.Setpgid || a.Pdeathsig != tc.pdeathsig {
				t.Errorf("Setpgid, Pdeathsig = %v, %v; want true, %v", a.Setpgid, a.Pdeathsig, tc.pdeathsig)
			}
			if tc.attr != nil && a.Credential != cred {
				t.Errorf("Credential dropped")
			}
			if got := cmd.Cancel != nil && cmd.WaitDelay == 3*time.Second; got != tc.cancel {
				t.Errorf("Cancel set, WaitDelay = %v, %v; want %v", cmd.Cancel != nil, cmd.WaitDelay, tc.cancel)
			}
		})
	}
}

// Pdeathsig follows the forking thread: a child started with cmd.Start from
// a goroutine whose thread is later retired (a goroutine that exits locked,
// as the sandbox's build steps do) is SIGKILLed; one started with Start is
// forked from a thread held until it exits and lives on.
func TestStartSurvivesRetiredThreads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    func(*exec.Cmd) error
		survives bool
	}{
		{"cmd.Start, its thread retired", (*exec.Cmd).Start, false},
		{"Start, the caller's thread retired", Start, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "30")
			Set(cmd)
			started := make(chan error, 1)
			onRetiredThread(func() { started <- tc.start(cmd) })
			if err := <-started; err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if tc.survives {
					t.Errorf("the child died when an unrelated thread was retired: %v", err)
				}
				return
			case <-time.After(2 * time.Second):
			}
			if !tc.survives {
				t.Errorf("the child outlived the thread that forked it: this test no longer shows the hazard")
			}
			Kill(cmd)
			<-exited
		})
	}
}

// onRetiredThread runs fn in a goroutine locked to a thread the runtime
// retires when fn returns: not the main thread, which it never retires.
func onRetiredThread(fn func()) {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if unix.Gettid() != unix.Getpid() {
			fn()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread() // another thread: this one is locked here
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}
