package vm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUUse is what the host's scheduler gave a guest's QEMU so far: the
// time its threads ran and the time they waited on a run queue, runnable
// but not running (/proc/<pid>/task/*/schedstat, CONFIG_SCHED_INFO).
type CPUUse struct {
	Ran, Waited time.Duration
	// threads is each thread's use by tid, when read per thread.
	threads map[string]CPUUse
}

// Since is the use from from to u, never negative: per thread when both
// were read per thread, so that a thread exiting between them (QEMU's
// idle workers) does not take its earlier time off the difference; a
// thread new since from counts whole.
func (u CPUUse) Since(from CPUUse) (ran, waited time.Duration) {
	if u.threads == nil || from.threads == nil {
		return max(0, u.Ran-from.Ran), max(0, u.Waited-from.Waited)
	}
	for tid, t := range u.threads {
		f := from.threads[tid]
		ran += max(0, t.Ran-f.Ran)
		waited += max(0, t.Waited-f.Waited)
	}
	return ran, waited
}

// ErrNoCPUUse is a guest whose host CPU use the lab cannot read (an
// in-process guest, a host without schedstat).
var ErrNoCPUUse = errors.New("QEMU's CPU use is not readable")

// readCPUUse sums the schedstat of every thread of process pid. A thread
// that exits between the listing and the read is left out.
func readCPUUse(pid int) (CPUUse, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return CPUUse{}, fmt.Errorf("failed to list QEMU's threads: %w", err)
	}
	u := CPUUse{threads: map[string]CPUUse{}}
	read := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		ran, waited, err := parseSchedstat(string(b))
		if err != nil {
			return CPUUse{}, fmt.Errorf("%s/%s/schedstat: %w", dir, e.Name(), err)
		}
		u.Ran += ran
		u.Waited += waited
		u.threads[e.Name()] = CPUUse{Ran: ran, Waited: waited}
		read++
	}
	if read == 0 {
		return CPUUse{}, ErrNoCPUUse
	}
	return u, nil
}

// parseSchedstat reads a schedstat line: ns on a CPU, ns waiting on a run
// queue, timeslices.
func parseSchedstat(s string) (ran, waited time.Duration, err error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("bad schedstat %q", s)
	}
	r, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad schedstat %q: %w", s, err)
	}
	w, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad schedstat %q: %w", s, err)
	}
	return time.Duration(r), time.Duration(w), nil
}
