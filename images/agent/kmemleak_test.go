package agent

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// sigBlocked reads the calling thread's blocked-signal mask.
func sigBlocked(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "SigBlk:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no SigBlk line in /proc/thread-self/status")
	return 0
}

// TestUnsignalled: the kmemleak scan's thread blocks the signals that
// would stop a scan (SIGCHLD, SIGURG, SIGINT...), and only that thread.
func TestUnsignalled(t *testing.T) {
	bit := func(s unix.Signal) uint64 { return 1 << (uint(s) - 1) }
	var inside uint64
	if err := unsignalled(func() error { inside = sigBlocked(t); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, s := range []unix.Signal{unix.SIGCHLD, unix.SIGURG, unix.SIGINT, unix.SIGTERM, unix.SIGALRM} {
		if inside&bit(s) == 0 {
			t.Errorf("the scan's thread does not block %v (SigBlk %016x)", s, inside)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if out := sigBlocked(t); out&bit(unix.SIGURG) != 0 {
		t.Errorf("the caller's thread blocks SIGURG too (SigBlk %016x)", out)
	}
}
