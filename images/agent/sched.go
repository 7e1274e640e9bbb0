package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// policyNumbers maps wire.Policies to the kernel's SCHED_* values.
var policyNumbers = map[string]uint32{
	wire.PolicyOther: unix.SCHED_NORMAL,
	wire.PolicyBatch: unix.SCHED_BATCH,
	wire.PolicyIdle:  unix.SCHED_IDLE,
	wire.PolicyFIFO:  unix.SCHED_FIFO,
	wire.PolicyRR:    unix.SCHED_RR,
}

// matchTasks returns every task under proc (a /proc tree), threads
// included, whose comm starts with prefix, by pid. A task that exits while
// it is read is left out.
func matchTasks(proc, prefix string) ([]wire.Task, error) {
	var out []wire.Task
	for pid, dir := range eachTask(proc) {
		b, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil {
			continue
		}
		if comm := strings.TrimSuffix(string(b), "\n"); strings.HasPrefix(comm, prefix) {
			out = append(out, wire.Task{PID: pid, Comm: comm})
		}
	}
	slices.SortFunc(out, func(a, b wire.Task) int { return a.PID - b.PID })
	return out, nil
}

// cpuSet turns an affinity list into a CPU set; "" gives nil (no change).
func cpuSet(list string) (*unix.CPUSet, error) {
	if list == "" {
		return nil, nil
	}
	cpus, err := wire.ParseCPUList(list)
	if err != nil {
		return nil, err
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c >= len(set)*64 {
			return nil, fmt.Errorf("cpu %d in %q: want below %d", c, list, len(set)*64)
		}
		set.Set(c)
	}
	return &set, nil
}

// schedAttr is cur with the policy (and its priority) and the nice value
// of x applied; what x leaves empty stays as it is. Deadline parameters and
// flags other than reset-on-fork are cleared when the policy changes.
func schedAttr(cur unix.SchedAttr, x wire.Sched) *unix.SchedAttr {
	a := cur
	a.Size = unix.SizeofSchedAttr
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
	if x.Policy != "" {
		a.Policy = policyNumbers[x.Policy]
		a.Priority = uint32(x.Priority)
		a.Runtime, a.Deadline, a.Period = 0, 0, 0
	}
	if x.Nice != nil {
		a.Nice = int32(*x.Nice)
	}
	return &a
}

// checkSched refuses what the kernel would take for something else: an
// unknown policy, a priority outside 1-99 for fifo and rr (or any for the
// others), a nice value out of range.
func checkSched(x wire.Sched) error {
	_, known := policyNumbers[x.Policy]
	switch {
	case x.Policy != "" && !known:
		return fmt.Errorf("bad policy %q, want one of %s", x.Policy, strings.Join(wire.Policies, ", "))
	case wire.RealTime(x.Policy) && (x.Priority < 1 || x.Priority > 99):
		return fmt.Errorf("bad priority %d for %s, want [1-99]", x.Priority, x.Policy)
	case !wire.RealTime(x.Policy) && x.Priority != 0:
		return fmt.Errorf("priority %d needs policy fifo or rr", x.Priority)
	case x.Nice != nil && (*x.Nice < -20 || *x.Nice > 19):
		return fmt.Errorf("bad nice %d, want [-20-19]", *x.Nice)
	}
	return nil
}

// tune applies x's policy and nice, and the affinity set (nil: none), to
// the task pid; 0 is the calling thread.
func tune(pid int, x wire.Sched, set *unix.CPUSet) error {
	if set != nil {
		if err := unix.SchedSetaffinity(pid, set); err != nil {
			return fmt.Errorf("sched_setaffinity cpus %s: %w", x.CPUs, err)
		}
	}
	if x.Policy == "" && x.Nice == nil {
		return nil
	}
	cur, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return fmt.Errorf("sched_getattr: %w", err)
	}
	if err := unix.SchedSetAttr(pid, schedAttr(*cur, x), 0); err != nil {
		return fmt.Errorf("sched_setattr %s: %w", describeSched(x), err)
	}
	return nil
}

// describeSched writes x's policy and nice as chrt and nice would.
func describeSched(x wire.Sched) string {
	var parts []string
	if x.Policy != "" {
		parts = append(parts, "policy "+x.Policy)
	}
	if wire.RealTime(x.Policy) {
		parts = append(parts, fmt.Sprintf("priority %d", x.Priority))
	}
	if x.Nice != nil {
		parts = append(parts, fmt.Sprintf("nice %d", *x.Nice))
	}
	return strings.Join(parts, " ")
}

// schedTasks applies x to every task under proc whose comm starts with
// x.Task and returns those it changed. A task gone before its turn (ESRCH)
// is skipped; any other refusal is returned with its errno, after the
// other tasks were tried.
func schedTasks(proc string, x wire.Sched) ([]wire.Task, error) {
	if x.Task == "" {
		return nil, fmt.Errorf("sched: no task prefix given")
	}
	if x.CPUs == "" && x.Policy == "" && x.Nice == nil {
		return nil, fmt.Errorf("sched %s: nothing to set (cpus, policy or nice)", x.Task)
	}
	if err := checkSched(x); err != nil {
		return nil, fmt.Errorf("sched %s: %w", x.Task, err)
	}
	set, err := cpuSet(x.CPUs)
	if err != nil {
		return nil, fmt.Errorf("sched %s: %w", x.Task, err)
	}
	tasks, err := matchTasks(proc, x.Task)
	if err != nil {
		return nil, err
	}
	changed := []wire.Task{}
	var errs *multierror.Error
	for _, t := range tasks {
		err := tune(t.PID, x, set)
		switch {
		case errors.Is(err, unix.ESRCH):
		case err != nil:
			errs = multierror.Append(errs, fmt.Errorf("%s (pid %d): %w", t.Comm, t.PID, err))
		default:
			changed = append(changed, t)
		}
	}
	return changed, errs.ErrorOrNil()
}
