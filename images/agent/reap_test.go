package agent

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProcStat(t *testing.T) {
	for _, tc := range []struct {
		line  string
		state string
		ppid  int
	}{
		{"42 (sleep) Z 1 42 42 0", "Z", 1},
		{"43 (a) b) (c) S 7 43 43 0", "S", 7},
	} {
		state, ppid, ok := procStat(tc.line)
		if !ok || state != tc.state || ppid != tc.ppid {
			t.Errorf("procStat(%q) = %q, %d, %v", tc.line, state, ppid, ok)
		}
	}
	if _, _, ok := procStat("garbage"); ok {
		t.Error("procStat accepted a line without a command")
	}
}

// As a child subreaper this test process inherits orphans as PID 1 does:
// the reaper must collect an orphan yet leave the exit status of a child
// the agent started (and waits for through os/exec) to exec.Cmd.Wait.
func TestReapTakesOrphansNotOwnChildren(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("no child subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	c := &children{pids: map[int]bool{}}
	// The orphan: the shell exits at once, its child sleeps briefly and dies as ours.
	maker := exec.Command("/bin/sh", "-c", "sleep 0.2 & echo $!")
	out, err := maker.Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	// Our own child: exits with 7 and stays a zombie until Wait.
	own := exec.Command("/bin/sh", "-c", "exit 7")
	if err := c.start(own, own.Start); err != nil {
		t.Fatal(err)
	}
	var reaped []int
	for deadline := time.Now().Add(5 * time.Second); !slices.Contains(reaped, orphan); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d not reaped (reaped %v)", orphan, reaped)
		}
		reaped = append(reaped, c.reap()...)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); err == nil {
		t.Errorf("orphan %d still in /proc after reap", orphan)
	}
	if slices.Contains(reaped, own.Process.Pid) {
		t.Fatal("the reaper took the agent's own child")
	}
	err = own.Wait()
	c.done(own)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("own child: Wait = %v, want exit status 7", err)
	}
}
