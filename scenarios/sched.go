package scenarios

import (
	"fmt"
	"strings"

	"napilab/images/wire"
)

// commMax is the longest comm the kernel keeps (TASK_COMM_LEN 16, less the NUL).
const commMax = 15

// boundThreads are kthreads the kernel keeps on their CPU (PF_NO_SETAFFINITY):
// it refuses their affinity with EINVAL.
var boundThreads = []string{"ksoftirqd/", "migration/", "cpuhp/", "kworker/"}

// MinTasks is how many tasks a sched step must match: Min, by default 1.
func (x *Sched) MinTasks() int {
	if x.Min == nil {
		return 1
	}
	return *x.Min
}

// sched checks a sched step.
func (k *checker) sched(p Pos, x *Sched) {
	c := k.c
	switch {
	case x.Task == "":
		c.add(p, "sched needs task: a comm prefix such as napi/eth0- or ksoftirqd/")
	case len(x.Task) > commMax:
		c.add(p, "sched task %q never matches: a comm has at most %d characters (TASK_COMM_LEN), use %q", x.Task, commMax, x.Task[:commMax])
	}
	if x.CPUs == "" && x.Policy == "" && x.Priority == 0 && x.Nice == nil {
		c.add(p, "sched needs at least one of cpus, policy, priority, nice")
	}
	if x.CPUs != "" {
		k.cpuList(p, "sched cpus", x.CPUs)
		for _, b := range boundThreads {
			if x.Task != "" && (strings.HasPrefix(b, x.Task) || strings.HasPrefix(x.Task, b)) {
				c.add(p, "sched task %q with cpus: matches %s threads, which the kernel keeps on their CPU (it refuses their affinity with EINVAL)",
					x.Task, strings.TrimSuffix(b, "/"))
				break
			}
		}
	}
	k.schedParams(p, "sched ", "", x.Policy, x.Priority, x.Nice)
	if x.Min != nil && *x.Min < 0 {
		c.add(p, "sched min %d: want 0 or more tasks (0 allows none)", *x.Min)
	}
}

// schedParams checks a policy with its priority and nice. Messages start
// with subject ("sched ", "load l: ") and name the fields with key before
// them ("sink_" for a load's receiver).
func (k *checker) schedParams(p Pos, subject, key, policy string, priority int, nice *int) {
	add := func(format string, args ...any) { k.c.add(p, subject+format, args...) }
	if policy != "" && !contains(wire.Policies, policy) {
		add("%spolicy %q: want %s", key, policy, orList(wire.Policies))
		return
	}
	switch {
	case wire.RealTime(policy) && (priority < 1 || priority > 99):
		add("%spolicy %s needs %spriority: 1-99, got %d", key, policy, key, priority)
	case priority != 0 && policy == "":
		add("%spriority %d needs %spolicy: fifo or rr", key, priority, key)
	case priority != 0 && !wire.RealTime(policy):
		add("%spriority %d is for fifo and rr, not %s", key, priority, policy)
	}
	switch {
	case nice == nil:
	case *nice < -20 || *nice > 19:
		add("%snice %d: want -20 to 19", key, *nice)
	case !wire.TakesNice(policy):
		add("%snice is for policies other and batch, not %s", key, policy)
	}
}

// cpuList checks an affinity list against the machine's CPUs.
func (k *checker) cpuList(p Pos, what, list string) {
	cpus, err := wire.ParseCPUList(list)
	if err != nil {
		k.c.add(p, "%s %q: want a CPU list like 1 or 0-1", what, list)
		return
	}
	for _, cpu := range cpus {
		if cpu >= k.s.Machine.CPUs {
			k.c.add(p, "%s %q names cpu %d: the machine has %d cpus", what, list, cpu, k.s.Machine.CPUs)
			return
		}
	}
}

// sinkSched checks a load's receiver scheduling and socket buffer.
func (k *checker) sinkSched(l *Load) {
	k.schedParams(l.Pos, "load "+l.Name+": ", "sink_", l.SinkPolicy, l.SinkPriority, l.SinkNice)
	maxBuf := k.s.Machine.MemoryMB << 20 / 4
	switch {
	case l.RcvBuf == 0:
	case l.Kind != "udp":
		k.c.add(l.Pos, "load %s: rcvbuf is for udp loads (the receiver's socket), not %s", l.Name, l.Kind)
	case l.RcvBuf < 4096 || l.RcvBuf > maxBuf:
		k.c.add(l.Pos, "load %s: rcvbuf %d: want 4096 to %d bytes (the kernel doubles it; a quarter of the guest's %d MiB)",
			l.Name, l.RcvBuf, maxBuf, k.s.Machine.MemoryMB)
	}
}

// explainSched says what a sched step sets.
func explainSched(x *Sched) string {
	parts := schedWords(x.Policy, x.Priority, x.Nice)
	if x.CPUs != "" {
		parts = append([]string{"cpus " + x.CPUs}, parts...)
	}
	want := fmt.Sprintf("at least %d must match", x.MinTasks())
	if x.MinTasks() == 0 {
		want = "none need match"
	}
	return fmt.Sprintf("tune tasks named %s*: %s (%s)", x.Task, strings.Join(parts, ", "), want)
}

// schedWords spells a policy, its priority and a nice value as chrt and nice would.
func schedWords(policy string, priority int, nice *int) []string {
	var parts []string
	if policy != "" {
		parts = append(parts, "policy "+policy)
	}
	if priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", priority))
	}
	if nice != nil {
		parts = append(parts, fmt.Sprintf("nice %d", *nice))
	}
	return parts
}
