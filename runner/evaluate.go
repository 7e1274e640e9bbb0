package runner

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"napilab/images/wire"
	"napilab/results"
	"napilab/results/metrics"
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
	r := t.evalKind(a)
	r.TimingOnly = a.TimingOnly()
	return r
}

func (t *timeline) evalKind(a *scenarios.Assert) results.Assert {
	switch {
	case a.During != nil:
		return t.evalDuring(a, results.Assert{Name: assertName(a, defaultName(a)), Kind: kindOf(a), Line: a.Pos.Line})
	case a.Each != "":
		return t.evalEach(a, results.Assert{Name: assertName(a, defaultName(a)), Kind: kindOf(a), Line: a.Pos.Line})
	case a.Polls != nil:
		p := a.Polls
		return t.evalBound(a, "polls", defaultName(a), &scenarios.Bound{Metric: p.Metric(p.Context.Fixed), Min: p.Min, Max: p.Max}, false)
	case a.Threads != nil:
		return t.evalThreads(a)
	case a.NoStall != nil:
		return t.evalNoStall(a)
	case a.Grows != nil:
		return t.evalGrows(a)
	case a.Delta != nil:
		return t.evalBound(a, "delta", a.Delta.Metric+" delta", a.Delta, false)
	case a.Rate != nil:
		return t.evalBound(a, "rate", a.Rate.Metric+" rate", a.Rate, true)
	case a.Ratio != nil:
		return t.evalRatio(a)
	case a.Latency != nil:
		return t.evalLatency(a)
	}
	return results.Assert{Name: assertName(a, "unknown"), Line: a.Pos.Line, Measured: "not evaluated", Bound: "a known assertion"}
}

// kindOf names an assertion's kind as results record it.
func kindOf(a *scenarios.Assert) string {
	switch {
	case a.Grows != nil:
		return "grows"
	case a.Delta != nil:
		return "delta"
	case a.Rate != nil:
		return "rate"
	case a.Ratio != nil:
		return "ratio"
	case a.Polls != nil:
		return "polls"
	}
	return "unknown"
}

// defaultName names a metric assertion that has no name:.
func defaultName(a *scenarios.Assert) string {
	switch {
	case a.Grows != nil:
		return a.Grows.Metric + " grows"
	case a.Delta != nil:
		return a.Delta.Metric + " delta"
	case a.Rate != nil:
		return a.Rate.Metric + " rate"
	case a.Ratio != nil:
		return a.Ratio.Num + " / " + a.Ratio.Den
	case a.Polls != nil:
		what := "polls"
		if a.Polls.Packets {
			what = "packets polled"
		}
		target := a.Polls.NAPI
		if a.Polls.Dev != "" {
			target = a.Polls.Dev
		}
		ctx := a.Polls.Context.Fixed
		if ctx == "" {
			ctx = "the expected context"
		}
		return fmt.Sprintf("%s of %s in %s", what, target, ctx)
	}
	return "unknown"
}

// flipPeriod is the shortest period at which the timeline writes path: a
// snapshot shorter than that cannot see the file flip away and back.
func flipPeriod(steps []*scenarios.Step, path string) float64 {
	p := 1.0
	for _, st := range steps {
		if st.Write != nil && st.Write.Path == path && st.Every > 0 {
			p = min(p, st.Every.D().Seconds())
		}
		p = min(p, flipPeriod(st.Parallel, path))
	}
	return p
}

// writesOf returns the host time spans, [start, done] in seconds since the
// timeline began, of every write of path the timeline made.
func (t *timeline) writesOf(path string) [][2]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var spans [][2]float64
	for st, its := range t.iters {
		if st.Write == nil || st.Write.Path != path {
			continue
		}
		for _, it := range its {
			spans = append(spans, [2]float64{it.start, it.done})
		}
	}
	return spans
}

// straddles says whether two or more of the writes may have taken effect
// while the snapshot s was read (between its request and its reply).
func straddles(s sampleRec, writes [][2]float64) bool {
	if s.Sent == 0 {
		return false // recorded before requests were timed
	}
	n := 0
	for _, w := range writes {
		if w[0] <= s.Host && w[1] >= s.Sent {
			n++
		}
	}
	return n >= 2
}

func (t *timeline) evalThreads(a *scenarios.Assert) (r results.Assert) {
	th := a.Threads
	r = results.Assert{Name: assertName(a, fmt.Sprintf("%s* while %s=%s", th.Prefix, th.Path, th.Equals)),
		Kind: "threads-while", Line: a.Pos.Line, Bound: fmt.Sprintf(">= %d %s* threads in every snapshot with %s = %s", th.Min, th.Prefix, th.Path, th.Equals)}
	f := fileSource(th.Netns, th.Path)
	tsrc := wire.PrefixThreads + th.Prefix
	group := ""
	for i, as := range t.s.Asserts {
		if as == a {
			group = fmt.Sprintf("assert%d", i)
		}
	}
	period := flipPeriod(t.s.Timeline, th.Path)
	writes := t.writesOf(th.Path)
	var matching, bad, slow, straddling int
	low := -1
	var example string
	for _, s := range t.samples {
		if s.Group != group {
			continue
		}
		// A snapshot is three reads; one that took a whole flip period (a
		// vCPU preempted under TCG) may have seen the file flip away and
		// back around the thread list.
		if s.Data.Took >= period {
			slow++
			continue
		}
		// Under TCG two writes of a flip may land closer than their
		// period (a late write, then one on time): a snapshot during two
		// of them may have seen the file flip away and back too.
		if straddles(s, writes) {
			straddling++
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
	if slow > 0 {
		defer func() { r.Measured += fmt.Sprintf(" (%d slow snapshots skipped)", slow) }()
	}
	if straddling > 0 {
		defer func() {
			r.Measured += fmt.Sprintf(" (%d snapshots during two writes of %s skipped)", straddling, th.Path)
		}()
	}
	switch {
	case matching == 0 && slow+straddling > 0:
		// Every snapshot was too slow to trust: the lab could not look.
		r.Unmeasured = true
		r.Measured = fmt.Sprintf("no snapshot read %s within a flip period", th.Path)
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
	r := results.Assert{Name: assertName(a, "no stall of "+ns.Load), Kind: "no-stall", Line: a.Pos.Line,
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

// metricValue reads a metric from one snapshot.
func metricValue(m metrics.Ref, s wire.Sample) (float64, error) {
	text, ok := s.Values[m.Source]
	if !ok {
		return 0, fmt.Errorf("%s was not sampled: %s", m.Source, s.Errors[m.Source])
	}
	series, err := metrics.ParseSource(m.Source, text)
	if err != nil {
		return 0, err
	}
	v, ok := m.From(series)
	if !ok {
		return 0, fmt.Errorf("no %s in %s", m.Name, m.Source)
	}
	return v, nil
}

// metricDelta is a metric's change between the snapshots taken before and
// after the timeline, and the guest seconds between them.
func (t *timeline) metricDelta(name string) (delta, seconds float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	var snaps []wire.Sample
	for _, s := range t.samples {
		if s.Group == metricsGroup {
			snaps = append(snaps, s.Data)
		}
	}
	if len(snaps) < 2 {
		return 0, 0, unmeasured{fmt.Errorf("%d snapshots of %s, want one before and one after the timeline", len(snaps), m.Source)}
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	a, err := metricValue(m, first)
	if err != nil {
		return 0, 0, err
	}
	b, err := metricValue(m, last)
	if err != nil {
		return 0, 0, err
	}
	return b - a, last.T - first.T, nil
}

func bound(min, max *float64) string {
	switch {
	case min != nil && max != nil:
		return fmt.Sprintf("%g..%g", *min, *max)
	case min != nil:
		return fmt.Sprintf(">= %g", *min)
	case max != nil:
		return fmt.Sprintf("<= %g", *max)
	}
	return "any"
}

func within(v float64, min, max *float64) bool {
	return (min == nil || v >= *min) && (max == nil || v <= *max)
}

func (t *timeline) evalGrows(a *scenarios.Assert) results.Assert {
	g := a.Grows
	m := max(g.Min, 1)
	return t.evalBound(a, "grows", g.Metric+" grows", &scenarios.Bound{Metric: g.Metric, Min: &m}, false)
}

// evalBound checks a metric's delta (or rate, per second) over the timeline.
func (t *timeline) evalBound(a *scenarios.Assert, kind, name string, b *scenarios.Bound, perSecond bool) results.Assert {
	r := results.Assert{Name: assertName(a, name), Kind: kind, Line: a.Pos.Line, Bound: bound(b.Min, b.Max)}
	d, secs, err := t.metricDelta(b.Metric)
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), isUnmeasured(err)
		return r
	}
	v, unit := d, ""
	if perSecond {
		if secs <= 0 {
			r.Measured = "no time passed between the snapshots"
			return r
		}
		v, unit = d/secs, "/s"
	}
	r.Measured = fmt.Sprintf("%+.4g%s", v, unit)
	r.Passed = within(v, b.Min, b.Max)
	return r
}

func (t *timeline) evalRatio(a *scenarios.Assert) results.Assert {
	q := a.Ratio
	r := results.Assert{Name: assertName(a, q.Num+" / "+q.Den), Kind: "ratio", Line: a.Pos.Line, Bound: bound(q.Min, q.Max)}
	num, _, err := t.metricDelta(q.Num)
	if err == nil {
		var den float64
		if den, _, err = t.metricDelta(q.Den); err == nil && den == 0 {
			err = fmt.Errorf("%s did not change", q.Den)
		}
		if err == nil {
			v := num / den
			r.Measured = fmt.Sprintf("%.4g (%g / %g)", v, num, den)
			r.Passed = within(v, q.Min, q.Max)
			return r
		}
	}
	r.Measured, r.Unmeasured = err.Error(), isUnmeasured(err)
	return r
}

// unmeasured is an error of the lab's measuring (a snapshot the guest did
// not answer in time), not a value the kernel gave: its assertion is
// unmeasured, an ERROR unless the kernel is implicated otherwise.
type unmeasured struct{ error }

func (e unmeasured) Unwrap() error { return e.error }

func isUnmeasured(err error) bool {
	var u unmeasured
	return errors.As(err, &u)
}

// loadResults summarises every load that ran.
func (t *timeline) loadResults() []results.Load {
	var out []results.Load
	for _, name := range sortedLoadNames(t.stats) {
		lr := t.stats[name]
		l := results.Load{Name: name, Sent: lr.sent, SendErrors: lr.sendErrors}
		if lr.sender != nil && lr.sender.Latency != nil {
			l.Latency = (*results.Latency)(lr.sender.Latency)
		}
		if lr.sink != nil {
			l.XSK = xskSummary(lr.sink.XSK)
			l.Bytes = lr.sink.Bytes
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

func (t *timeline) evalLatency(a *scenarios.Assert) results.Assert {
	lb := a.Latency
	r := results.Assert{Name: assertName(a, lb.Load+" latency"), Kind: "latency", Line: a.Pos.Line}
	lr, ok := t.stats[lb.Load]
	if !ok || lr.sender == nil || lr.sender.Latency == nil || lr.sender.Latency.Count == 0 {
		r.Measured = "no request/response completed"
		r.Bound = "latency figures"
		return r
	}
	l := lr.sender.Latency
	var measured, bounds []string
	r.Passed = true
	for _, c := range []struct {
		name string
		want scenarios.Duration
		got  float64
	}{{"p50", lb.P50, l.P50}, {"p90", lb.P90, l.P90}, {"p99", lb.P99, l.P99}, {"p99.9", lb.P999, l.P999}} {
		if c.want == 0 {
			continue
		}
		measured = append(measured, fmt.Sprintf("%s %.0fus", c.name, c.got))
		bounds = append(bounds, fmt.Sprintf("%s <= %v", c.name, c.want.D()))
		r.Passed = r.Passed && c.got <= float64(c.want.D().Microseconds())
	}
	r.Measured = strings.Join(measured, ", ") + fmt.Sprintf(" over %d transactions", l.Count)
	r.Bound = strings.Join(bounds, ", ")
	return r
}
