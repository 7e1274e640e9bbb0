package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/stats"
)

// An assertion is one kind of assert: no-splat, grows, polls, .... Each kind
// has a file, assert_<kind>.go, holding its YAML type (the Assert field of
// that key) and these methods; assertKinds lists the kinds.
type assertion interface {
	// check reports what is wrong with the assertion a holds.
	check(k *checker, a *Assert)
	// explain says what it checks, over a's span.
	explain(a *Assert) string
	// name names an assertion without a name: in results.
	name() string
	// timingOnly says whether the kind checks only how fast things happened
	// on the host's clock, whatever its window (see TimingOnly).
	timingOnly() bool
	// metrics lists the metrics it reads.
	metrics() []string
	// eval checks it over the whole timeline of s against what the run
	// recorded.
	eval(s *Scenario, rec Record, a *Assert) results.Assert
}

// spanned is an assertion that can take during: or each:: a value
// measured over a span of the timeline, bounded by min and/or max.
type spanned interface {
	assertion
	bounds() (min, max *float64)
	// unit follows the measured value ("/s").
	unit() string
	// context is the poll context expected after a repetition that set
	// value ("" for kinds without one); false: the assertion says nothing
	// about that value.
	context(value string) (string, bool)
	// measure measures the value over [from, to] in context ctx.
	measure(over Between, ctx string, from, to float64) (float64, error)
}

// assertKinds lists the assertion kinds, by YAML key, in the order messages
// name them: of returns a's assertion of that kind and whether it is set.
var assertKinds = []struct {
	name string
	of   func(*Assert) (assertion, bool)
}{
	{"no-splat", func(a *Assert) (assertion, bool) { return a.NoSplat, a.NoSplat != nil }},
	{"threads-while", func(a *Assert) (assertion, bool) { return a.Threads, a.Threads != nil }},
	{"no-stall", func(a *Assert) (assertion, bool) { return a.NoStall, a.NoStall != nil }},
	{"grows", func(a *Assert) (assertion, bool) { return a.Grows, a.Grows != nil }},
	{"delta", func(a *Assert) (assertion, bool) { return a.Delta, a.Delta != nil }},
	{"rate", func(a *Assert) (assertion, bool) { return a.Rate, a.Rate != nil }},
	{"ratio", func(a *Assert) (assertion, bool) { return a.Ratio, a.Ratio != nil }},
	{"latency", func(a *Assert) (assertion, bool) { return a.Latency, a.Latency != nil }},
	{"polls", func(a *Assert) (assertion, bool) { return a.Polls, a.Polls != nil }},
}

// AssertKinds lists the assertion kinds, for messages and documentation.
var AssertKinds = func() []string {
	var out []string
	for _, k := range assertKinds {
		out = append(out, k.name)
	}
	return out
}()

// held returns the kinds a holds, and their assertions.
func (a *Assert) held() ([]string, []assertion) {
	var names []string
	var as []assertion
	for _, k := range assertKinds {
		if x, ok := k.of(a); ok {
			names, as = append(names, k.name), append(as, x)
		}
	}
	return names, as
}

// kind returns a's one assertion and its kind's name, or nil and "unknown"
// when it holds none or several.
func (a *Assert) kind() (assertion, string) {
	if names, as := a.held(); len(as) == 1 {
		return as[0], names[0]
	}
	return nil, "unknown"
}

// Windowed says whether an assertion kind can take during: or each:.
func (a *Assert) Windowed() bool {
	x, _ := a.kind()
	_, ok := x.(spanned)
	return ok
}

// named returns a's name, or def.
func (a *Assert) named(def string) string {
	if a.Name != "" {
		return a.Name
	}
	return def
}

// Record is what a run recorded, as assertions read it: the runner builds
// one from its timeline once the timeline has finished. Times are host
// seconds since the timeline began.
type Record interface {
	// Delta is a metric's change between the snapshots taken before and
	// after the timeline, and the guest seconds between them.
	Delta(metric string) (delta, secs float64, err error)
	// Near is a metric's change between the snapshots nearest a window's
	// edges, and the seconds between them.
	Near(metric string, from, to float64) (delta, secs float64, err error)
	// At is a metric's change between the snapshots taken at exactly from
	// and to (an each: repetition's edges), and the seconds between them.
	At(metric string, from, to float64) (delta, secs float64, err error)
	// Step returns when the named step started and ended; false if it did
	// not run.
	Step(name string) (start, end float64, ok bool)
	// Reps returns every repetition of the named step.
	Reps(step string) []Rep
	// Writes returns the [start, done] spans of every write of path.
	Writes(path string) [][2]float64
	// Snapshots returns the snapshots taken for a threads-while assertion.
	Snapshots(a *Assert) []Snapshot
	// Load returns a load's final statistics: its sink's and its sender's
	// (an rr client's latency), nil if not known.
	Load(name string) (sink, sender *wire.LoadStats)
}

// Rep is one repetition of a step.
type Rep struct {
	Start, Done float64 // the action was issued, it returned
	Value       string  // what it set (Step.Value)
	// From and To are the times of the edge snapshots an each: assertion
	// measures between (-1: not taken).
	From, To float64
}

// Snapshot is one snapshot: when it was requested (0: not timed), when its
// reply came, and what it read.
type Snapshot struct {
	Sent, Host float64
	Data       wire.Sample
}

// Between measures a metric's change over a span (Record.Near or Record.At).
type Between func(metric string, from, to float64) (delta, secs float64, err error)

// Unmeasured marks err as the lab's measuring failing (a snapshot the guest
// did not answer in time), not a value the kernel gave: its assertion is
// unmeasured, an ERROR unless the kernel is implicated otherwise.
func Unmeasured(err error) error { return unmeasured{err} }

type unmeasured struct{ error }

func (e unmeasured) Unwrap() error { return e.error }

// IsUnmeasured says whether err is marked Unmeasured.
func IsUnmeasured(err error) bool {
	var u unmeasured
	return errors.As(err, &u)
}

// errNoChange is a ratio whose denominator did not change over a window:
// the snapshots were there, so the window was measured (the kernel did not
// do what the ratio counts) and fails whatever its bounds, as a ratio over
// the whole timeline does.
var errNoChange = errors.New("did not change")

// Evaluate checks one of the scenario's assertions against what its run
// recorded.
func (s *Scenario) Evaluate(rec Record, a *Assert) results.Assert {
	r := a.evaluate(s, rec)
	r.TimingOnly = a.TimingOnly()
	return r
}

func (a *Assert) evaluate(s *Scenario, rec Record) results.Assert {
	x, _ := a.kind()
	if x == nil {
		return results.Assert{Name: a.named("unknown"), Line: a.Pos.Line, Measured: "not evaluated", Bound: "a known assertion"}
	}
	w, ok := x.(spanned)
	switch {
	case a.During != nil && ok:
		return a.evalDuring(rec, w, a.result(x))
	case a.Each != "" && ok:
		return a.evalEach(rec, w, a.result(x))
	}
	return x.eval(s, rec, a)
}

// Resolve returns the window's span on rec's timeline.
func (w *Window) Resolve(rec Record) (from, to float64, err error) {
	at := func(name string, end bool) (float64, error) {
		start, stop, ok := rec.Step(name)
		if !ok {
			return 0, fmt.Errorf("step %q did not run", name)
		}
		if end {
			return stop, nil
		}
		return start, nil
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

// evalDuring checks an assertion over its during: window.
func (a *Assert) evalDuring(rec Record, w spanned, r results.Assert) results.Assert {
	r.Window = a.Span()
	from, to, err := a.During.Resolve(rec)
	if err == nil && to <= from {
		err = fmt.Errorf("the window %.2f-%.2fs is empty", from, to)
	}
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), true
		return r
	}
	r.Spans = [][2]float64{{from, to}}
	min, max := w.bounds()
	r.Bound = bound(min, max)
	ctx, _ := w.context("")
	v, err := w.measure(rec.Near, ctx, from, to)
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), !errors.Is(err, errNoChange)
		return r
	}
	r.Measured = fmt.Sprintf("%.4g%s in %.2f-%.2fs", v, w.unit(), from, to)
	r.Passed = within(v, min, max)
	return r
}

// maxSpans bounds the windows an each: assertion records for the report.
const maxSpans = 50

// evalEach checks an assertion after every repetition of its each: step.
func (a *Assert) evalEach(rec Record, w spanned, r results.Assert) results.Assert {
	r.Window = a.Span()
	min, max := w.bounds()
	r.Bound = bound(min, max) + " in every window"
	var checked, failed, unmeasured int
	var bad []string
	for i, it := range rec.Reps(a.Each) {
		ctx, ok := w.context(it.Value)
		if !ok {
			continue // a value the assertion says nothing about
		}
		from, to := it.From, it.To
		if from < 0 || to < 0 || to-from < a.Within.D().Seconds()/2 {
			unmeasured++ // no snapshots, or less than half the window between them
			continue
		}
		v, err := w.measure(rec.At, ctx, from, to)
		if err != nil && !errors.Is(err, errNoChange) {
			unmeasured++
			continue
		}
		checked++
		if err == nil && within(v, min, max) {
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
			got := fmt.Sprintf("%.4g%s%s", v, w.unit(), what)
			if err != nil {
				got = err.Error()
			}
			bad = append(bad, fmt.Sprintf("repetition %d (%s) at %.2fs: %s in the %.0f ms after the action returned",
				i+1, it.Value, from, got, (to-from)*1000))
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

// evalBound checks a metric's change (or its rate, per second) over the
// timeline against min and max.
func evalBound(rec Record, r results.Assert, metric string, min, max *float64, perSecond bool) results.Assert {
	r.Bound = bound(min, max)
	d, secs, err := rec.Delta(metric)
	if err != nil {
		r.Measured, r.Unmeasured = err.Error(), IsUnmeasured(err)
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
	r.Measured = signed(v) + unit
	r.Passed = within(v, min, max)
	return r
}

// signed formats a change with its sign, whole above 1000 (+10010, not
// +1.001e+04).
func signed(v float64) string {
	if v >= 0 {
		return "+" + stats.FormatNum(v)
	}
	return stats.FormatNum(v)
}

// metricDelta measures a metric's change over a span, for windowed kinds.
func metricDelta(over Between, metric string, from, to float64) (float64, error) {
	d, _, err := over(metric, from, to)
	return d, err
}

// bound says what min and max allow, as results show it.
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

// result starts the result of a, whose assertion is x.
func (a *Assert) result(x assertion) results.Assert {
	_, kind := a.kind()
	return results.Assert{Name: a.named(x.name()), Kind: kind, Line: a.Pos.Line}
}
