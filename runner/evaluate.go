package runner

import (
	"fmt"
	"sort"
	"strings"

	"napilab/images/wire"
	"napilab/results"
	"napilab/scenarios"
)

func assertName(a *scenarios.Assert, def string) string {
	if a.Name != "" {
		return a.Name
	}
	return def
}

// evaluate checks one assertion against what the timeline recorded.
func (t *timeline) evaluate(a *scenarios.Assert) results.Assert {
	switch {
	case a.Threads != nil:
		return t.evalThreads(a)
	case a.NoStall != nil:
		return t.evalNoStall(a)
	case a.Grows != nil:
		return t.evalGrows(a)
	}
	return results.Assert{Name: assertName(a, "unknown"), Line: a.Line, Measured: "not evaluated", Bound: "a known assertion"}
}

func (t *timeline) evalThreads(a *scenarios.Assert) results.Assert {
	th := a.Threads
	r := results.Assert{Name: assertName(a, fmt.Sprintf("%s* while %s=%s", th.Prefix, th.Path, th.Equals)),
		Kind: "threads-while", Line: a.Line, Bound: fmt.Sprintf(">= %d %s* threads in every snapshot with %s = %s", th.Min, th.Prefix, th.Path, th.Equals)}
	f := fileSource(th.Netns, th.Path)
	tsrc := wire.PrefixThreads + th.Prefix
	group := ""
	for i, as := range t.s.Asserts {
		if as == a {
			group = fmt.Sprintf("assert%d", i)
		}
	}
	var matching, bad int
	low := -1
	var example string
	for _, s := range t.samples {
		if s.Group != group {
			continue
		}
		v1, v2 := strings.TrimSpace(s.Data.Values[f]), strings.TrimSpace(s.Data.Values[f+"#2"])
		if v1 != th.Equals || v2 != th.Equals {
			continue
		}
		matching++
		n := 0
		if l := strings.TrimSpace(s.Data.Values[tsrc]); l != "" {
			n = len(strings.Split(l, "\n"))
		}
		if low < 0 || n < low {
			low = n
		}
		if n < th.Min {
			bad++
			if example == "" {
				example = fmt.Sprintf("at guest t=%.2fs: %d threads", s.Data.T, n)
			}
		}
	}
	switch {
	case matching == 0:
		r.Measured = fmt.Sprintf("no snapshot saw %s = %s", th.Path, th.Equals)
	case bad > 0:
		r.Measured = fmt.Sprintf("%d of %d snapshots had fewer (min %d)", bad, matching, low)
		r.Detail = example
	default:
		r.Passed = true
		r.Measured = fmt.Sprintf("min %d threads over %d snapshots", low, matching)
	}
	return r
}

func (t *timeline) evalNoStall(a *scenarios.Assert) results.Assert {
	ns := a.NoStall
	w := ns.Window.D()
	r := results.Assert{Name: assertName(a, "no stall of "+ns.Load), Kind: "no-stall", Line: a.Line,
		Bound: fmt.Sprintf(">= %d packets in every %v window", ns.Min, w)}
	lr, ok := t.stats[ns.Load]
	if !ok || lr.sink == nil {
		r.Measured = "the load never ran to its end"
		return r
	}
	min, at, n := windowMin(lr.sink.Buckets, int(w.Milliseconds()/wire.BucketWidthMs))
	if n == 0 {
		r.Measured = fmt.Sprintf("no full window (received %d packets)", lr.sink.Packets)
		return r
	}
	r.Measured = fmt.Sprintf("min %d packets per window over %d windows", min, n)
	if min < ns.Min {
		r.Detail = fmt.Sprintf("the window starting %.1fs after the sink started got %d", float64(at*wire.BucketWidthMs)/1000, min)
	}
	r.Passed = min >= ns.Min
	return r
}

// windowMin slides a window of width buckets over the span from the first
// packet to the end and returns the smallest sum, where it starts, and the
// number of windows.
func windowMin(b []uint64, width int) (min uint64, at, n int) {
	first := 0
	for first < len(b) && b[first] == 0 {
		first++
	}
	if width < 1 || len(b)-first < width {
		return 0, 0, 0
	}
	var sum uint64
	for i := first; i < first+width; i++ {
		sum += b[i]
	}
	min, at = sum, first
	for i := first + width; i < len(b); i++ {
		sum += b[i]
		sum -= b[i-width]
		if sum < min {
			min, at = sum, i-width+1
		}
	}
	return min, at, len(b) - first - width + 1
}

func (t *timeline) evalGrows(a *scenarios.Assert) results.Assert {
	g := a.Grows
	r := results.Assert{Name: assertName(a, g.Metric+" grows"), Kind: "grows", Line: a.Line,
		Bound: fmt.Sprintf(">= %g", g.Min)}
	parts := strings.Split(g.Metric, ".")
	cpu := -1
	if len(parts) == 3 {
		fmt.Sscanf(parts[2], "cpu%d", &cpu)
	}
	var vals []uint64
	for _, s := range t.samples {
		txt, ok := s.Data.Values[wire.SourceSoftirqs]
		if !ok {
			continue
		}
		si, err := results.ParseSoftirqs(txt)
		if err != nil {
			continue
		}
		if v, ok := si.Value(parts[1], cpu); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) < 2 {
		r.Measured = fmt.Sprintf("%d snapshots of %s", len(vals), g.Metric)
		return r
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	d := float64(hi - lo)
	r.Measured = fmt.Sprintf("+%g", d)
	r.Passed = d >= g.Min
	return r
}

// loadResults summarises every load that ran.
func (t *timeline) loadResults() []results.Load {
	var out []results.Load
	for _, name := range sortedLoadNames(t.stats) {
		lr := t.stats[name]
		l := results.Load{Name: name, Sent: lr.sent, SendErrors: lr.sendErrors}
		if lr.sink != nil {
			l.Received = lr.sink.Packets
			per := 1000 / wire.BucketWidthMs
			gap, longest := 0, 0
			started := false
			for i, v := range lr.sink.Buckets {
				if i%per == 0 {
					l.PerSecond = append(l.PerSecond, 0)
				}
				l.PerSecond[len(l.PerSecond)-1] += v
				started = started || v > 0
				if started && v == 0 {
					gap++
					longest = max(longest, gap)
				} else {
					gap = 0
				}
			}
			l.MaxGapMs = longest * wire.BucketWidthMs
		}
		out = append(out, l)
	}
	return out
}

func sortedLoadNames(m map[string]*loadResult) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
