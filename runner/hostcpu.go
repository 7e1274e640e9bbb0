package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuUse is what the host's scheduler gave a guest's QEMU so far: the
// time its threads ran and the time they waited on a run queue, runnable
// but not running (/proc/<pid>/task/*/schedstat, CONFIG_SCHED_INFO).
type cpuUse struct {
	ran, waited time.Duration
	// threads is each thread's use by tid, when read per thread.
	threads map[string]cpuUse
}

// since is the use from from to u, never negative: per thread when both
// were read per thread, so that a thread exiting between them (QEMU's
// idle workers) does not take its earlier time off the difference; a
// thread new since from counts whole.
func (u cpuUse) since(from cpuUse) (ran, waited time.Duration) {
	if u.threads == nil || from.threads == nil {
		return max(0, u.ran-from.ran), max(0, u.waited-from.waited)
	}
	for tid, t := range u.threads {
		f := from.threads[tid]
		ran += max(0, t.ran-f.ran)
		waited += max(0, t.waited-f.waited)
	}
	return ran, waited
}

// errNoCPUUse is a guest whose host CPU use the lab cannot read (an
// in-process guest, a host without schedstat).
var errNoCPUUse = errors.New("QEMU's CPU use is not readable")

// readCPUUse sums the schedstat of every thread of process pid. A thread
// that exits between the listing and the read is left out.
func readCPUUse(pid int) (cpuUse, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return cpuUse{}, fmt.Errorf("failed to list QEMU's threads: %w", err)
	}
	u := cpuUse{threads: map[string]cpuUse{}}
	read := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		ran, waited, err := parseSchedstat(string(b))
		if err != nil {
			return cpuUse{}, fmt.Errorf("%s/%s/schedstat: %w", dir, e.Name(), err)
		}
		u.ran += ran
		u.waited += waited
		u.threads[e.Name()] = cpuUse{ran: ran, waited: waited}
		read++
	}
	if read == 0 {
		return cpuUse{}, errNoCPUUse
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

// hostShare is QEMU's CPU use over a window of host time: a step from its
// start to its deadline.
type hostShare struct {
	wall        time.Duration
	ran, waited time.Duration
	vcpus       int  // the guest's vCPU threads (0: one)
	measured    bool // false: the use could not be read at one end
}

// measureShare returns the share between from and the use read now;
// read is nil or failing for a guest that cannot say.
func measureShare(read func() (cpuUse, error), from cpuUse, fromOK bool, began time.Time, vcpus int) hostShare {
	sh := hostShare{wall: time.Since(began), vcpus: vcpus}
	if read == nil || !fromOK {
		return sh
	}
	now, err := read()
	if err != nil {
		return sh
	}
	sh.ran, sh.waited = now.since(from)
	sh.measured = true
	return sh
}

// Starvation thresholds (see starved). Measured on the lab's 2-core host
// with a kernel build and other tests beside it, over 5 s, for one
// CPU-bound thread (a TCG vCPU is one): alone it ran 0.60 CPU and waited
// 0.40 of the time; beside 2 spinning processes it ran 0.19 and waited
// 0.80; beside 6, 0.08 and 0.92. An idle thread (a halted guest) ran and
// waited ~0 either way.
const (
	// starvedRan: QEMU ran under half a CPU per vCPU on average.
	starvedRan = 0.5
	// starvedWaited: its threads waited on a run queue at least a quarter
	// of the window, and at least as long as they ran.
	starvedWaited = 0.25
)

// starved says whether the host, not the guest, made the window slow:
// QEMU ran less than starvedRan of a CPU while its threads waited for a
// CPU at least as long as they ran and at least starvedWaited of the
// window. A guest that wanted no CPU (halted, its tasks blocked) is not
// starved however little it ran. Unmeasured is not starved.
func (s hostShare) starved() bool {
	if !s.measured || s.wall <= 0 {
		return false
	}
	w := float64(s.wall)
	return float64(s.ran) < starvedRan*w*float64(max(1, s.vcpus)) && s.waited >= s.ran && float64(s.waited) >= starvedWaited*w
}

// String says what QEMU got: "QEMU got 0.40 s of CPU in 10.00 s (and
// waited 8.10 s for one)".
func (s hostShare) String() string {
	if !s.measured {
		return fmt.Sprintf("QEMU's CPU use over the %.2f s was not measured", s.wall.Seconds())
	}
	return fmt.Sprintf("QEMU got %.2f s of CPU in %.2f s (and waited %.2f s for one)", s.ran.Seconds(), s.wall.Seconds(), s.waited.Seconds())
}
