package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/suggest"
	"napilab/results/metrics"
)

var hexMask = regexp.MustCompile(`^[0-9a-fA-F,]+$`)

// step checks a step's repetition and its one action.
func (k *checker) step(st *Step) {
	c, p := k.c, st.Pos
	kinds, acts := st.held()
	if len(acts) == 0 && c.unknownIn[p] {
		return // its unknown key, reported, was meant to be the action
	}
	if len(acts) != 1 {
		c.add(p, "a step needs exactly one action (%s), got %d: %s", strings.Join(Actions, ", "), len(kinds), strings.Join(kinds, ", "))
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
	k.deadline(p, "deadline", st.Deadline)
	for _, d := range []struct {
		key string
		d   Duration
	}{{"sleep", st.Sleep}, {"for", st.For}, {"every", st.Every}} {
		if d.d < 0 {
			c.add(p, "%s %v: want a positive duration", d.key, d.d.D())
		} else if d.d.D() > MaxSpan {
			c.add(p, "%s %v: longer than a run may last (%v)", d.key, d.d.D(), MaxSpan)
		}
	}
	acts[0].check(k, st)
}

// MinDeadline is the shortest deadline an action may have: below it a
// guest under TCG misses it on plain work, and every step would be a hang.
const MinDeadline = 100 * time.Millisecond

// MaxSpan bounds a sleep, a repetition's for: and period (a run is minutes).
const MaxSpan = time.Hour

// deadline checks an action's deadline (0: the default's).
func (k *checker) deadline(p Pos, key string, d Duration) {
	if d != 0 && d.D() < MinDeadline {
		k.c.add(p, "%s %v: below %v a step is a hang before it could finish (omit it for the default %v)", key, d.D(), MinDeadline, DefaultDeadline)
	} else if d.D() > MaxSpan {
		k.c.add(p, "%s %v: longer than a run may last (%v)", key, d.D(), MaxSpan)
	}
}

// txQueues is the TX queue count the topology gives a device, 0 if unknown.
func (k *checker) txQueues(ns, dev string) int {
	if n, ok := k.nics[dev]; ok && ns == "" {
		return n.Queues
	}
	return k.index().vethTx[ns+"/"+dev]
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
	x, _ := a.kind()
	if x == nil {
		k.c.add(a.Pos, "an assert needs exactly one of %s", strings.Join(AssertKinds, ", "))
		return
	}
	x.check(k, a)
	k.window(a)
}

// metric checks a metric's name and that the run can measure it: its
// netns, device, queue and CPU are in the machine and topology.
func (k *checker) metric(p Pos, name string) {
	p = k.fieldPos(p, "metric", name)
	m, err := metrics.Parse(name)
	if err != nil {
		k.c.add(p, "%v", err)
		return
	}
	if ns, ok := metrics.SourceNetns(m.Source); ok && !k.netns[ns] {
		k.checkNetns(p, ns)
		return
	}
	if n := k.s.Machine.CPUs; m.CPU >= n && n > 0 {
		k.c.add(p, "metric %q: the machine has %d vCPUs (cpu0 to cpu%d)", name, n, n-1)
	}
	if m.Dev == "" || m.Dev == metrics.AllDevices || m.Dev == "lo" {
		return
	}
	in := k.devNetns(m.Dev)
	switch {
	case len(in) == 0:
		k.c.add(p, "metric %q: no device %q in the topology%s", name, m.Dev, k.devSuggestion(m.Dev))
	case !m.AnyNetns && !slices.Contains(in, m.Netns):
		k.c.add(p, "metric %q reads %s, but %s is in %s%s", name, nsName(m.Netns), m.Dev, nsName(in[0]), netnsHint(m, in[0]))
	}
	if q, ok := strings.CutPrefix(m.NAPI, "rx-"); ok {
		if nic := k.nics[m.Dev]; nic != nil && (m.AnyNetns || m.Netns == "") { // NICs are in the root namespace
			if n, _ := strconv.Atoi(q); n >= nic.Queues {
				k.c.add(p, "metric %q: nic %s has %d queue(s) (rx-0 to rx-%d)", name, m.Dev, nic.Queues, nic.Queues-1)
			}
		}
	}
}

// devNetns lists the namespaces ("" the root) holding a device of that name.
func (k *checker) devNetns(dev string) []string {
	var out []string
	for key := range k.devs {
		if ns, d, _ := strings.Cut(key, "/"); d == dev {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// devSuggestion names the declared device dev was meant to be.
func (k *checker) devSuggestion(dev string) string {
	var names []string
	for key := range k.devs {
		_, d, _ := strings.Cut(key, "/")
		names = append(names, d)
	}
	slices.Sort(names)
	if best := suggest.Closest(dev, names); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if len(names) == 0 {
		return ""
	}
	return " (declared: " + strings.Join(slices.Compact(names), ", ") + ")"
}

func nsName(ns string) string {
	if ns == "" {
		return "the root namespace"
	}
	return "netns " + ns
}

// netnsHint says how to name the device where it is.
func netnsHint(m metrics.Ref, ns string) string {
	family, _, _ := strings.Cut(m.Name, ".")
	switch {
	case family == "netdev":
		return ": netdev.<dev> reads the root namespace's /proc/net/dev only"
	case ns == "":
		return fmt.Sprintf(": write %s.%s.…", family, m.Dev)
	default:
		return fmt.Sprintf(": write %s.%s/%s.…", family, ns, m.Dev)
	}
}

// bounds checks an assertion's min: and max:.
func (k *checker) bounds(p Pos, min, max *float64) {
	if min == nil && max == nil {
		k.c.add(p, "needs min: and/or max:")
	}
	if min != nil && max != nil && *min > *max {
		k.c.add(p, "min %g is above max %g", *min, *max)
	}
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
