package runner

import (
	"fmt"
	"math"

	"napilab/internal/wire"
	"napilab/results/metrics"
	"napilab/scenarios"
)

// record is what the timeline recorded, copied out once it finished: the
// scenarios.Record its assertions are evaluated against.
type record struct {
	s       *scenarios.Scenario
	samples []sampleRec
	spans   []stepSpan
	iters   map[*scenarios.Step][]iteration
	stats   map[string]*loadResult
}

// stepSpan is when a step ran, in seconds since the timeline began.
type stepSpan struct {
	name       string
	start, end float64
}

// record copies out what the timeline recorded; call it once the timeline
// has finished.
func (t *timeline) record() *record {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &record{s: t.s, samples: append([]sampleRec(nil), t.samples...),
		iters: map[*scenarios.Step][]iteration{}, stats: map[string]*loadResult{}}
	for _, sp := range t.spans {
		r.spans = append(r.spans, stepSpan{sp.name, sp.start.Sub(t.start).Seconds(), sp.end.Sub(t.start).Seconds()})
	}
	for st, its := range t.iters {
		r.iters[st] = append([]iteration(nil), its...)
	}
	for n, lr := range t.stats {
		c := *lr
		r.stats[n] = &c
	}
	return r
}

// Delta is a metric's change between the snapshots taken before and after
// the timeline, and the guest seconds between them.
func (r *record) Delta(name string) (delta, seconds float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	var snaps []wire.Sample
	for _, s := range r.samples {
		if s.Group == metricsGroup {
			snaps = append(snaps, s.Data)
		}
	}
	if len(snaps) < 2 {
		return 0, 0, scenarios.Unmeasured(fmt.Errorf("%d snapshots of %s, want one before and one after the timeline", len(snaps), m.Source))
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

// Near is a metric's change between the snapshots nearest the window's
// edges (not taken across an edge), and the seconds between them. The
// timeline snapshots at the edges itself (edges.go); a window whose nearest snapshots are further off than a
// quarter of its length (at least 20 ms) is not measured. A snapshot is
// placed where the guest read it (its uptime on the host's clock, see
// readAt), not where its reply arrived: a slow (debug, flooded) guest's
// replies come a few hundred ms late.
func (r *record) Near(name string, from, to float64) (delta, secs float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	at := readAt(r.samples)
	fromDone, toDone := r.changeEnd(from), r.changeEnd(to)
	var a, b *sampleRec
	var ta, tb float64
	for i := range r.samples {
		s := &r.samples[i]
		if _, ok := s.Data.Values[m.Source]; !ok {
			continue
		}
		h := at(s)
		// A snapshot read across an edge may have read the state before
		// or after a change made there: it measures neither side (7.3: a
		// napi step's own change, read by the periodic sampler while the
		// step ran, made a window's delta 0 and the run FAIL).
		if !acrossEdge(s, h, from, fromDone) && (a == nil || math.Abs(h-from) < math.Abs(ta-from)) {
			a, ta = s, h
		}
		if !acrossEdge(s, h, to, toDone) && (b == nil || math.Abs(h-to) < math.Abs(tb-to)) {
			b, tb = s, h
		}
	}
	tol := max(0.02, (to-from)/4)
	switch {
	case a == nil:
		return 0, 0, fmt.Errorf("no snapshot of %s", m.Source)
	case a == b || tb <= ta:
		return 0, 0, fmt.Errorf("one snapshot of %s in %.2f-%.2fs", m.Source, from, to)
	case math.Abs(ta-from) > tol || math.Abs(tb-to) > tol:
		return 0, 0, fmt.Errorf("nearest snapshots of %s at %.2fs and %.2fs for the window %.2f-%.2fs", m.Source, ta, tb, from, to)
	}
	va, err := metricValue(m, a.Data)
	if err != nil {
		return 0, 0, err
	}
	vb, err := metricValue(m, b.Data)
	if err != nil {
		return 0, 0, err
	}
	return vb - va, tb - ta, nil
}

// At is a metric's change between the snapshots taken at exactly the
// host times from and to (an each: repetition's edges), and the seconds
// between them.
func (r *record) At(name string, from, to float64) (delta, secs float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	var a, b *wire.Sample
	for i := range r.samples {
		switch s := &r.samples[i]; s.Host {
		case from:
			a = &s.Data
		case to:
			b = &s.Data
		}
	}
	if a == nil || b == nil {
		return 0, 0, fmt.Errorf("no snapshot at %.3fs or %.3fs", from, to)
	}
	va, err := metricValue(m, *a)
	if err != nil {
		return 0, 0, err
	}
	vb, err := metricValue(m, *b)
	return vb - va, to - from, err
}

// Step returns when the named step started and ended.
func (r *record) Step(name string) (start, end float64, ok bool) {
	for _, sp := range r.spans {
		if sp.name == name {
			return sp.start, sp.end, true
		}
	}
	return 0, 0, false
}

// Reps returns every repetition of the named step.
func (r *record) Reps(step string) []scenarios.Rep {
	var out []scenarios.Rep
	for _, it := range r.iters[r.s.StepNames()[step]] {
		out = append(out, scenarios.Rep{Start: it.start, Done: it.done, Value: it.value, From: it.from, To: it.to})
	}
	return out
}

// Writes returns the spans, [start, done], of every write of path.
func (r *record) Writes(path string) [][2]float64 {
	var spans [][2]float64
	for st, its := range r.iters {
		if st.Write == nil || st.Write.Path != path {
			continue
		}
		for _, it := range its {
			spans = append(spans, [2]float64{it.start, it.done})
		}
	}
	return spans
}

// Snapshots returns the snapshots of a's sampler group (threads-while).
func (r *record) Snapshots(a *scenarios.Assert) []scenarios.Snapshot {
	group := ""
	for i, as := range r.s.Asserts {
		if as == a {
			group = fmt.Sprintf("assert%d", i)
		}
	}
	var out []scenarios.Snapshot
	for _, s := range r.samples {
		if s.Group == group {
			out = append(out, scenarios.Snapshot{Sent: s.Sent, Host: s.Host, Data: s.Data})
		}
	}
	return out
}

// Load returns a load's sink's and sender's final statistics.
func (r *record) Load(name string) (sink, sender *wire.LoadStats) {
	if lr := r.stats[name]; lr != nil {
		return lr.sink, lr.sender
	}
	return nil, nil
}

// changeEnd is when the change at a window's edge returned: the first
// repetition of the step that starts there (the edge itself when none does).
func (r *record) changeEnd(edge float64) float64 {
	done := edge
	for _, its := range r.iters {
		if len(its) > 0 && math.Abs(its[0].start-edge) < 0.005 {
			done = max(done, its[0].done)
		}
	}
	return done
}

// acrossEdge says the snapshot s (placed at h, the middle of its reading:
// readAt) may have been read while the change at edge, which returned at
// done (changeEnd), was under way. The host's own times decide where they
// can (reply received before the change began, request sent after it
// returned); otherwise the guest clock's placement, which is a few ms off:
// alone, it put the snapshot taken just before a step across it under a
// busy host and left one read during the step to measure the window (7.3
// beside a build: threaded-busy-poll's napi-get delta 0).
func acrossEdge(s *sampleRec, h, edge, done float64) bool {
	if s.Sent > 0 && (s.Host <= edge || s.Sent >= done) {
		return false // read wholly before the change began, or after it returned
	}
	return h-s.Data.Took/2 < done && h+s.Data.Took/2 > edge
}
