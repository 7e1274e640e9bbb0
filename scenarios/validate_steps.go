package scenarios

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"napilab/results/metrics"
)

var hexMask = regexp.MustCompile(`^[0-9a-fA-F,]+$`)

// step checks a step's repetition and its one action.
func (k *checker) step(st *Step) {
	c, p := k.c, st.Pos
	kinds, acts := st.held()
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
	acts[0].check(k, st)
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

// metric checks a metric's name and the netns it reads.
func (k *checker) metric(p Pos, name string) {
	m, err := metrics.Parse(name)
	if err != nil {
		k.c.add(p, "%v", err)
	} else if ns, ok := metrics.SourceNetns(m.Source); ok {
		k.checkNetns(p, ns)
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
