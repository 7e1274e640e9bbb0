package agent

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// children are the processes the agent starts itself: os/exec waits for
// those, so the reaper must leave them alone (a wait4(-1) would steal their
// exit status from exec.Cmd.Wait). Everything else that dies as our child
// is an orphan reparented to PID 1, and the reaper collects it.
type children struct {
	mu   sync.Mutex
	pids map[int]bool
}

// kids tracks every child the agent starts; start them with kids.start.
var kids = &children{pids: map[int]bool{}}

// start runs start (cmd.Start, perhaps on a thread in a netns) and tracks
// cmd's process until done. A scan cannot run in between, so it never takes
// a tracked child for an orphan.
func (c *children) start(cmd *exec.Cmd, start func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := start()
	if cmd.Process != nil {
		c.pids[cmd.Process.Pid] = true
	}
	return err
}

// done stops tracking cmd's process; call it after cmd.Wait returned.
func (c *children) done(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	c.mu.Lock()
	delete(c.pids, cmd.Process.Pid)
	c.mu.Unlock()
}

// reap waits for the zombie children of this process that it did not
// start itself and returns their pids.
func (c *children) reap() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var reaped []int
	for _, pid := range zombies("/proc", os.Getpid()) {
		if c.pids[pid] {
			continue
		}
		var ws unix.WaitStatus
		if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && n == pid {
			reaped = append(reaped, pid)
		}
	}
	return reaped
}

// reapLoop reaps orphans on every SIGCHLD and once a second. It never returns.
func (c *children) reapLoop() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGCHLD)
	tick := time.NewTicker(time.Second)
	for {
		select {
		case <-sig:
		case <-tick.C:
		}
		c.reap()
	}
}

// zombies lists the processes under procDir in state Z whose parent is ppid.
func zombies(procDir string, ppid int) []int {
	entries, _ := os.ReadDir(procDir)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procDir, e.Name(), "stat"))
		if err != nil {
			continue
		}
		if state, parent, ok := procStat(string(data)); ok && state == "Z" && parent == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads the state and parent pid of a /proc/<pid>/stat line; the
// command name may hold spaces and parentheses, so it parses after the last ')'.
func procStat(line string) (state string, ppid int, ok bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}
