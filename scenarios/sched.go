package scenarios

import (
	"fmt"

	"napilab/internal/wire"
)

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
