package scenarios

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napilab/results/metrics"
)

// Actions lists the step kinds, for messages and documentation.
var Actions = []string{"write", "sysctl", "link", "gro", "channels", "xdp", "qdisc", "napi", "inject", "rps", "xps", "irq", "sched", "exec",
	"kselftest", "start", "stop", "sleep", "wait", "parallel"}

// action names the one action a step has, or reports how many it has.
func (st *Step) actions() []string {
	var out []string
	for _, a := range []struct {
		set  bool
		name string
	}{
		{st.Write != nil, "write"}, {st.Sysctl != nil, "sysctl"}, {st.Link != nil, "link"}, {st.GRO != nil, "gro"},
		{st.Channels != nil, "channels"}, {st.XDP != nil, "xdp"}, {st.Qdisc != nil, "qdisc"}, {st.NAPI != nil, "napi"}, {st.Inject != nil, "inject"}, {st.RPS != nil, "rps"}, {st.XPS != nil, "xps"},
		{st.IRQ != nil, "irq"}, {st.Sched != nil, "sched"}, {st.Exec != nil, "exec"}, {len(st.Kselftest) > 0, "kselftest"}, {len(st.Start) > 0, "start"}, {len(st.Stop) > 0, "stop"},
		{st.Sleep > 0, "sleep"}, {st.Wait != nil, "wait"}, {len(st.Parallel) > 0, "parallel"},
	} {
		if a.set {
			out = append(out, a.name)
		}
	}
	return out
}

// Action is the kind of the step's action.
func (st *Step) Action() string {
	if a := st.actions(); len(a) == 1 {
		return a[0]
	}
	return ""
}

var kselftestRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*:[A-Za-z0-9][A-Za-z0-9_.+-]*$`)

// ValidKselftest reports whether name is a kselftest as kselftest-list.txt
// names it, "collection:test" (net:veth.sh, net/forwarding:router.sh).
func ValidKselftest(name string) bool { return kselftestRe.MatchString(name) }

var hexMask = regexp.MustCompile(`^[0-9a-fA-F,]+$`)

func (k *checker) step(st *Step) {
	c, p := k.c, st.Pos
	acts := st.actions()
	if len(acts) != 1 {
		c.add(p, "a step needs exactly one action (%s), got %d: %s", strings.Join(Actions, ", "), len(acts), strings.Join(acts, ", "))
		return
	}
	if st.Every > 0 && st.For == 0 && st.Count == 0 {
		c.add(p, "every needs for: or count:")
	}
	if (st.For > 0 || st.Count > 0 || st.Jitter > 0) && st.Every == 0 {
		c.add(p, "for:, count: and jitter: need every:")
	}
	for _, e := range st.Tolerate {
		if Errno(e) == 0 {
			c.add(p, "tolerate %q: want an errno name such as EOPNOTSUPP, EBUSY, ENETDOWN", e)
		}
	}
	if st.Count < 0 {
		c.add(p, "count %d: want a positive number", st.Count)
	}
	for _, l := range append(append([]string{}, st.Start...), st.Stop...) {
		if _, ok := k.s.Loads[l]; !ok {
			c.add(p, "no load %q under loads: (known: %s)", l, strings.Join(sortedKeys(k.s.Loads), ", "))
		}
	}
	switch acts[0] {
	case "write":
		k.checkNetns(p, st.Write.Netns)
		if st.Write.Path == "" {
			c.add(p, "write needs a path")
		}
		if (st.Write.Value == "") == (len(st.Write.Values) == 0) {
			c.add(p, "write needs value: or values:, not both")
		}
	case "sysctl":
		k.checkNetns(p, st.Sysctl.Netns)
		if st.Sysctl.Name == "" || (st.Sysctl.Value == "") == (len(st.Sysctl.Values) == 0) {
			c.add(p, "sysctl needs name: and value: or values:")
		}
	case "link":
		k.checkRef(p, st.Link.Netns, st.Link.Dev)
		if !contains([]string{"up", "down", "toggle"}, st.Link.State) {
			c.add(p, "link state %q: want up, down or toggle", st.Link.State)
		}
	case "gro":
		k.checkRef(p, st.GRO.Netns, st.GRO.Dev)
	case "channels":
		k.checkRef(p, st.Channels.Netns, st.Channels.Dev)
		if len(st.Channels.Values) == 0 {
			c.add(p, "channels needs values:")
		}
		for _, v := range st.Channels.Values {
			if v < 1 || v > MaxQueues {
				c.add(p, "channels %d: want 1-%d", v, MaxQueues)
			}
		}
	case "xdp":
		k.checkRef(p, st.XDP.Netns, st.XDP.Dev)
		if !contains([]string{"", "native", "generic"}, st.XDP.Mode) {
			c.add(p, "xdp mode %q: want native or generic", st.XDP.Mode)
		}
	case "qdisc":
		k.qdisc(p, st.Qdisc)
	case "napi":
		k.napi(p, st.NAPI)
	case "rps":
		k.checkRef(p, st.RPS.Netns, st.RPS.Dev)
		k.masks(p, st.RPS.CPUs, st.RPS.FlowCnt == nil)
	case "xps":
		k.checkRef(p, st.XPS.Netns, st.XPS.Dev)
		k.masks(p, st.XPS.CPUs, true)
	case "irq":
		if _, err := regexp.Compile(st.IRQ.Match); err != nil || st.IRQ.Match == "" {
			c.add(p, "irq match %q: want a regexp of IRQ names (e.g. virtio.-input.0)", st.IRQ.Match)
		}
		if !cpuList(st.IRQ.CPUs) {
			c.add(p, "irq cpus %q: want a CPU list like 1 or 0-1 below %d", st.IRQ.CPUs, k.s.Machine.CPUs)
		}
	case "sched":
		k.sched(p, st.Sched)
	case "exec":
		k.checkNetns(p, st.Exec.Netns)
		if len(st.Exec.Argv) == 0 {
			c.add(p, "exec needs argv:")
		}
	case "kselftest":
		for _, name := range st.Kselftest {
			if !ValidKselftest(name) {
				c.add(p, "kselftest %q: want collection:test as kselftest-list.txt names it, e.g. net:veth.sh", name)
			}
		}
		if st.Every > 0 {
			c.add(p, "kselftest runs each test once: drop every:")
		}
	case "wait":
		w := st.Wait
		k.checkNetns(p, w.Netns)
		if (w.Path == "") == (w.Threads == "") {
			c.add(p, "wait needs path: (with equals:) or threads:")
		}
		if st.Every > 0 {
			c.add(p, "wait polls by itself: drop every:")
		}
	}
	for _, ch := range st.Parallel {
		k.step(ch)
	}
}

// Qdisc ops and kinds the qdisc action takes; limit is for qdiscLimitKinds.
var (
	qdiscOps        = []string{"add", "replace", "delete"}
	qdiscKinds      = []string{"pfifo", "pfifo_fast", "fq_codel", "mq", "noqueue"}
	qdiscLimitKinds = []string{"pfifo", "fq_codel"}
)

func (k *checker) qdisc(p Pos, q *Qdisc) {
	c := k.c
	k.checkRef(p, q.Netns, q.Dev)
	if !contains(qdiscOps, q.Op) {
		c.add(p, "qdisc op %q: want %s", q.Op, orList(qdiscOps))
		return
	}
	if q.Op == "delete" {
		if len(q.Kind) > 0 || q.Limit != 0 {
			c.add(p, "qdisc delete removes whatever root qdisc %s has: drop kind: and limit:", q.Dev)
		}
		return
	}
	if len(q.Kind) == 0 {
		c.add(p, "qdisc %s needs kind: %s (or a list of them to cycle)", q.Op, orList(qdiscKinds))
	}
	if q.Limit < 0 || int64(q.Limit) > math.MaxUint32 {
		c.add(p, "qdisc limit %d: want 1-%d packets (none = the kernel's default)", q.Limit, uint32(math.MaxUint32))
	}
	for _, kind := range q.Kind {
		switch {
		case !contains(qdiscKinds, kind):
			c.add(p, "qdisc kind %q: want %s", kind, orList(qdiscKinds))
		case q.Limit != 0 && !contains(qdiscLimitKinds, kind):
			c.add(p, "qdisc %s takes no limit: (limit: is for %s)", kind, strings.Join(qdiscLimitKinds, " and "))
		case kind == "mq" && k.txQueues(q.Netns, q.Dev) == 1:
			c.add(p, "qdisc mq needs a device with several TX queues: %s has one (set its queues:)", q.Dev)
		}
	}
}

// txQueues is the TX queue count the topology gives a device, 0 if unknown.
func (k *checker) txQueues(ns, dev string) int {
	if n, ok := k.nics[dev]; ok && ns == "" {
		return n.Queues
	}
	for _, v := range k.s.Topology.Veths {
		if v.Name == dev && v.Netns == ns || v.Peer.Name == dev && v.Peer.Netns == ns {
			return v.Queues
		}
	}
	return 0
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func (k *checker) masks(p Pos, masks []string, required bool) {
	if len(masks) == 0 && required {
		k.c.add(p, "cpus: needs at least one hex mask, e.g. [\"2\"]")
	}
	for _, m := range masks {
		if !hexMask.MatchString(m) {
			k.c.add(p, "cpu mask %q: want hex like 3 or 0f", m)
		} else if v, err := strconv.ParseUint(strings.ReplaceAll(m, ",", ""), 16, 64); err == nil && v>>uint(k.s.Machine.CPUs) != 0 {
			k.c.add(p, "cpu mask %q names CPUs the %d-cpu machine lacks", m, k.s.Machine.CPUs)
		}
	}
}

var cpuListRe = regexp.MustCompile(`^\d+(-\d+)?(,\d+(-\d+)?)*$`)

func cpuList(s string) bool { return cpuListRe.MatchString(s) }

func (k *checker) assert(a *Assert) {
	c, p := k.c, a.Pos
	n := 0
	for _, set := range []bool{a.NoSplat != nil, a.Threads != nil, a.NoStall != nil, a.Grows != nil,
		a.Delta != nil, a.Rate != nil, a.Ratio != nil, a.Latency != nil, a.Polls != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.add(p, "an assert needs exactly one of no-splat, threads-while, no-stall, grows, delta, rate, ratio, latency, polls")
		return
	}
	metric := func(name string) {
		m, err := metrics.Parse(name)
		if err != nil {
			c.add(p, "%v", err)
		} else if ns, ok := metrics.SourceNetns(m.Source); ok {
			k.checkNetns(p, ns)
		}
	}
	bounds := func(min, max *float64) {
		if min == nil && max == nil {
			c.add(p, "needs min: and/or max:")
		}
		if min != nil && max != nil && *min > *max {
			c.add(p, "min %g is above max %g", *min, *max)
		}
	}
	switch {
	case a.NoSplat != nil:
		for _, al := range a.NoSplat.Allow {
			if _, err := regexp.Compile(al.Title); err != nil || al.Title == "" {
				c.add(p, "allow title %q: want a regexp", al.Title)
			}
			if al.Reason == "" {
				c.add(p, "allow %q needs a reason", al.Title)
			}
		}
	case a.Threads != nil:
		k.checkNetns(p, a.Threads.Netns)
		if a.Threads.Prefix == "" || a.Threads.Path == "" {
			c.add(p, "threads-while needs prefix: and path:")
		}
	case a.NoStall != nil:
		if _, ok := k.s.Loads[a.NoStall.Load]; !ok {
			c.add(p, "no load %q under loads:", a.NoStall.Load)
		}
		if a.NoStall.Window.D() < 100*time.Millisecond {
			c.add(p, "no-stall window %v: want at least 100ms", a.NoStall.Window.D())
		}
	case a.Grows != nil:
		metric(a.Grows.Metric)
	case a.Delta != nil:
		metric(a.Delta.Metric)
		bounds(a.Delta.Min, a.Delta.Max)
	case a.Rate != nil:
		metric(a.Rate.Metric)
		bounds(a.Rate.Min, a.Rate.Max)
	case a.Latency != nil:
		l, ok := k.s.Loads[a.Latency.Load]
		if !ok || !l.HasLatency() {
			c.add(p, "latency needs an rr load (or an xsk rr load), %q is not one", a.Latency.Load)
		}
		if a.Latency.P50+a.Latency.P90+a.Latency.P99+a.Latency.P999 == 0 {
			c.add(p, "latency needs at least one of p50, p90, p99, p999")
		}
	case a.Ratio != nil:
		metric(a.Ratio.Num)
		metric(a.Ratio.Den)
		bounds(a.Ratio.Min, a.Ratio.Max)
	case a.Polls != nil:
		k.polls(a)
		bounds(a.Polls.Min, a.Polls.Max)
	}
	k.window(a)
}

// errnoAliases are names that share a number with the one ErrnoName gives.
var errnoAliases = map[string]syscall.Errno{
	"EOPNOTSUPP": syscall.EOPNOTSUPP, "EWOULDBLOCK": syscall.EWOULDBLOCK, "EDEADLOCK": syscall.EDEADLK,
}

// Errno returns the errno with that name (EOPNOTSUPP), or 0.
func Errno(name string) syscall.Errno {
	if e, ok := errnoAliases[name]; ok {
		return e
	}
	for e := syscall.Errno(1); e < 256; e++ {
		if unix.ErrnoName(e) == name {
			return e
		}
	}
	return 0
}
