package runner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"napilab/images/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/model"
	"napilab/scenarios"
)

// Windowed assertions read the snapshots taken during the timeline (the
// napi_polls group carries every source they need) instead of the two
// taken around it.

// windowSpan returns a during: window in seconds since the timeline began.
func (t *timeline) windowSpan(w *scenarios.Window) (from, to float64, err error) {
	span := func(name string) (span, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, sp := range t.spans {
			if sp.name == name {
				return sp, nil
			}
		}
		return span{}, fmt.Errorf("step %q did not run", name)
	}
	at := func(name string, end bool) (float64, error) {
		sp, err := span(name)
		if end {
			return sp.end.Sub(t.start).Seconds(), err
		}
		return sp.start.Sub(t.start).Seconds(), err
	}
	switch {
	case w.Step != "":
		if from, err = at(w.Step, false); err == nil {
			to, err = at(w.Step, true)
		}
	case w.After != "":
		from, err = at(w.After, true)
		to = from + w.For.D().Seconds()
	default:
		if from, err = at(w.From, false); err == nil {
			to, err = at(w.To, true)
		}
	}
	return from + w.Skip.D().Seconds(), to, err
}

// metricIn is a metric's change between the snapshots nearest the window's
// edges (not taken across an edge), and the seconds between them. The timeline snapshots at the edges
// itself (edges.go); a window whose nearest snapshots are further off than a
// quarter of its length (at least 20 ms) is not measured. A snapshot is
// placed where the guest read it (its uptime on the host's clock, see
// readAt), not where its reply arrived: a slow (debug, flooded) guest's
// replies come a few hundred ms late.
func (t *timeline) metricIn(name string, from, to float64) (delta, secs float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	t.mu.Lock()
	at := readAt(t.samples)
	var a, b *sampleRec
	var ta, tb float64
	for i := range t.samples {
		s := &t.samples[i]
		if _, ok := s.Data.Values[m.Source]; !ok {
			continue
		}
		h := at(s)
		// A snapshot read across an edge may have read the state before
		// or after a change made there: it measures neither side (7.3: a
		// napi step's own change, read by the periodic sampler while the
		// step ran, made a window's delta 0 and the run FAIL).
		if !acrossEdge(h, s.Data.Took, from) && (a == nil || math.Abs(h-from) < math.Abs(ta-from)) {
			a, ta = s, h
		}
		if !acrossEdge(h, s.Data.Took, to) && (b == nil || math.Abs(h-to) < math.Abs(tb-to)) {
			b, tb = s, h
		}
	}
	t.mu.Unlock()
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

// acrossEdge says a snapshot placed at h (the middle of its reading, see
// readAt) that took took seconds was read across the host time edge.
func acrossEdge(h, took, edge float64) bool { return h-took/2 < edge && h+took/2 > edge }

// readAt places snapshots on the host's timeline at the middle of their
// reading, on the guest's clock (results.GuestClock).
func readAt(samples []sampleRec) func(*sampleRec) float64 {
	c := results.NewGuestClock(len(samples), func(i int) (float64, float64, float64) {
		return samples[i].Host, samples[i].Data.T, samples[i].Data.Took
	})
	return func(s *sampleRec) float64 {
		if s.Data.T <= 0 {
			return s.Host
		}
		return c.At(s.Host, s.Data.T+s.Data.Took/2)
	}
}

// metricAt is a metric's change between the snapshots taken at exactly the
// host times from and to (an each: repetition's edges), and the seconds
// between them.
func (t *timeline) metricAt(name string, from, to float64) (delta, secs float64, err error) {
	m, err := metrics.Parse(name)
	if err != nil {
		return 0, 0, err
	}
	t.mu.Lock()
	var a, b *wire.Sample
	for i := range t.samples {
		switch s := &t.samples[i]; s.Host {
		case from:
			a = &s.Data
		case to:
			b = &s.Data
		}
	}
	t.mu.Unlock()
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

// between measures a metric's change over a span: metricIn (snapshots nearest
// a window's edges) or metricAt (the snapshots at exactly its edges).
type between func(metric string, from, to float64) (delta, secs float64, err error)

// errNoChange is a ratio whose denominator did not change over a window:
// the snapshots were there, so the window was measured (the kernel did not
// do what the ratio counts) and fails whatever its bounds, as a ratio over
// the whole timeline does.
var errNoChange = errors.New("did not change")

// windowBounds is what a windowed assertion bounds: a value measured over a
// span, the bounds, and the value's unit.
type windowBounds struct {
	min, max *float64
	measure  func(ctx string, from, to float64) (float64, error)
	unit     string
}

func (t *timeline) windowed(a *scenarios.Assert, over between) windowBounds {
	delta := func(metric string) func(string, float64, float64) (float64, error) {
		return func(_ string, from, to float64) (float64, error) {
			d, _, err := over(metric, from, to)
			return d, err
		}
	}
	switch {
	case a.Grows != nil:
		m := max(a.Grows.Min, 1)
		return windowBounds{min: &m, measure: delta(a.Grows.Metric)}
	case a.Delta != nil:
		return windowBounds{min: a.Delta.Min, max: a.Delta.Max, measure: delta(a.Delta.Metric)}
	case a.Rate != nil:
		return windowBounds{min: a.Rate.Min, max: a.Rate.Max, unit: "/s", measure: func(_ string, from, to float64) (float64, error) {
			d, secs, err := over(a.Rate.Metric, from, to)
			if err == nil && secs <= 0 {
				err = fmt.Errorf("no time between the snapshots")
			}
			return d / secs, err
		}}
	case a.Ratio != nil:
		return windowBounds{min: a.Ratio.Min, max: a.Ratio.Max, measure: func(_ string, from, to float64) (float64, error) {
			num, _, err := over(a.Ratio.Num, from, to)
			if err != nil {
				return 0, err
			}
			den, _, err := over(a.Ratio.Den, from, to)
			if err == nil && den == 0 {
				err = fmt.Errorf("%s %w", a.Ratio.Den, errNoChange)
			}
			return num / den, err
		}}
	}
	p := a.Polls
	return windowBounds{min: p.Min, max: p.Max, measure: func(ctx string, from, to float64) (float64, error) {
		d, _, err := over(p.Metric(ctx), from, to)
		return d, err
	}}
}

// evalDuring checks an assertion over its during: window.
func (t *timeline) evalDuring(a *scenarios.Assert, r results.Assert) results.Assert {
	r.Window = a.Span()
	from, to, err := t.windowSpan(a.During)
	if err == nil && to <= from {
		err = fmt.Errorf("the window %.2f-%.2fs is empty", from, to)
	}
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), true
		return r
	}
	r.Spans = [][2]float64{{from, to}}
	wb := t.windowed(a, t.metricIn)
	r.Bound = bound(wb.min, wb.max)
	ctx := ""
	if a.Polls != nil {
		ctx = a.Polls.Context.Fixed
	}
	v, err := wb.measure(ctx, from, to)
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), !errors.Is(err, errNoChange)
		return r
	}
	r.Measured = fmt.Sprintf("%.4g%s in %.2f-%.2fs", v, wb.unit, from, to)
	r.Passed = within(v, wb.min, wb.max)
	return r
}

// maxSpans bounds the windows an each: assertion records for the report.
const maxSpans = 50

// evalEach checks an assertion after every repetition of its each: step.
func (t *timeline) evalEach(a *scenarios.Assert, r results.Assert) results.Assert {
	r.Window = a.Span()
	st := t.s.StepNames()[a.Each]
	t.mu.Lock()
	iters := append([]iteration(nil), t.iters[st]...)
	t.mu.Unlock()
	wb := t.windowed(a, t.metricAt)
	r.Bound = bound(wb.min, wb.max) + " in every window"
	var checked, failed, unmeasured int
	var bad []string
	for i, it := range iters {
		ctx := ""
		if p := a.Polls; p != nil {
			ctx = p.Context.Fixed
			if p.Context.ByValue != nil {
				if ctx = p.Context.ByValue[it.value]; ctx == "" {
					continue // a value the assertion says nothing about
				}
			}
		}
		from, to := it.from, it.to
		if from < 0 || to < 0 || to-from < a.Within.D().Seconds()/2 {
			unmeasured++ // no snapshots, or less than half the window between them
			continue
		}
		v, err := wb.measure(ctx, from, to)
		if err != nil && !errors.Is(err, errNoChange) {
			unmeasured++
			continue
		}
		checked++
		if err == nil && within(v, wb.min, wb.max) {
			continue
		}
		failed++
		if len(r.Spans) < maxSpans {
			r.Spans = append(r.Spans, [2]float64{from, to})
		}
		if len(bad) < 3 {
			what := ""
			if ctx != "" {
				what = " " + ctx
			}
			got := fmt.Sprintf("%.4g%s%s", v, wb.unit, what)
			if err != nil {
				got = err.Error()
			}
			bad = append(bad, fmt.Sprintf("repetition %d (%s) at %.2fs: %s in the %.0f ms after the action returned",
				i+1, it.value, from, got, (to-from)*1000))
		}
	}
	r.Measured = fmt.Sprintf("%d of %d windows in bounds", checked-failed, checked)
	if unmeasured > 0 {
		r.Measured += fmt.Sprintf(" (%d not measured: no snapshots at their edges)", unmeasured)
	}
	r.Detail = strings.Join(bad, "; ")
	switch {
	case failed > 0:
		// A kernel that misbehaved in a measured window fails, whatever else.
	case checked == 0 || unmeasured > checked:
		r.Unmeasured = true
	default:
		r.Passed = true
	}
	return r
}

// pollsEvery is the napi_polls period: fine enough that every windowed
// assertion's window holds about five snapshots, never below 20 ms.
func (t *timeline) pollsEvery() time.Duration {
	every := defaultPollsEvery
	for _, a := range t.s.Asserts {
		var w time.Duration
		switch {
		case a.Each != "":
			w = a.Within.D()
		case a.During != nil && a.During.After != "":
			w = a.During.For.D() - a.During.Skip.D()
		default:
			continue
		}
		every = min(every, w/5)
	}
	return max(every, 20*time.Millisecond)
}

// windowSources are the sources windowed assertions read, sampled with napi_polls.
func (t *timeline) windowSources() []string {
	srcs := []string{wire.SourceNAPIPolls}
	// The kthread rules (results/model). Listing the threads costs the
	// guest a walk of /proc (45 ms a read under TCG against 1-5 ms
	// without): only where a rule needs it.
	if t.s.SetsThreaded() && model.ReadsThreads(t.kernel) {
		srcs = append(srcs, metrics.SourceNAPIThreads)
	}
	// The rps rule: RPS IPIs per CPU (a read of softnet_stat is cheap).
	if t.s.SetsRPS() {
		srcs = append(srcs, metrics.SourceSoftnet)
	}
	for _, a := range t.s.Asserts {
		if a.During == nil && a.Each == "" {
			continue
		}
		for _, m := range (&scenarios.Scenario{Asserts: []*scenarios.Assert{a}}).Metrics() {
			if !slices.Contains(srcs, m.Source) {
				srcs = append(srcs, m.Source)
			}
		}
	}
	return srcs
}
