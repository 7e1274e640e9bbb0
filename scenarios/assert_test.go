package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"napilab/internal/wire"
	"napilab/results/metrics"
)

// fakeRecord is a run's record built by hand: no timeline, no VM.
type fakeRecord struct {
	steps map[string][2]float64
	reps  map[string][]Rep
	// change returns a metric's change over a span (from, to = -1: the
	// whole timeline).
	change func(metric string, from, to float64) (float64, error)
	loads  map[string][2]*wire.LoadStats
	snaps  []Snapshot
	writes [][2]float64
}

func (r *fakeRecord) over(metric string, from, to float64) (float64, float64, error) {
	if r.change == nil {
		return 0, 0, Unmeasured(fmt.Errorf("no snapshot of %s", metric))
	}
	d, err := r.change(metric, from, to)
	return d, to - from, err
}

func (r *fakeRecord) Delta(m string) (float64, float64, error) { return r.over(m, -1, 9) }
func (r *fakeRecord) Near(m string, from, to float64) (float64, float64, error) {
	return r.over(m, from, to)
}
func (r *fakeRecord) At(m string, from, to float64) (float64, float64, error) {
	return r.over(m, from, to)
}
func (r *fakeRecord) Step(name string) (float64, float64, bool) {
	sp, ok := r.steps[name]
	return sp[0], sp[1], ok
}
func (r *fakeRecord) Reps(step string) []Rep               { return r.reps[step] }
func (r *fakeRecord) Writes(string) [][2]float64           { return r.writes }
func (r *fakeRecord) Snapshots(*Assert) []Snapshot         { return r.snaps }
func (r *fakeRecord) Load(n string) (_, _ *wire.LoadStats) { return r.loads[n][0], r.loads[n][1] }

// TestEvaluateOnRecord: assertions evaluated on a hand-built record.
func TestEvaluateOnRecord(t *testing.T) {
	one := 1.0
	s := &Scenario{}
	rec := &fakeRecord{
		steps: map[string][2]float64{"flood": {1, 3}},
		reps: map[string][]Rep{"flip": {
			{Start: 1, Done: 1.01, Value: "1", From: 1.01, To: 1.11},
			{Start: 1.5, Done: 1.51, Value: "0", From: 1.51, To: 1.61},
			{Start: 2, Done: 2.01, Value: "1", From: 2.01, To: 2.11},
			{Start: 2.5, Done: 2.51, Value: "1", From: -1, To: -1},
		}},
		change: func(m string, from, to float64) (float64, error) {
			switch {
			case m == "softirqs.NET_RX" && from == 1.5 && to == 3:
				return 42, nil
			case m == "napi.polls.vrx.rx-0.kthread" && from == 1.01:
				return 5, nil
			case m == "napi.polls.vrx.rx-0.kthread" && from == 2.01:
				return 0, nil
			}
			return 0, fmt.Errorf("unexpected %s over %g-%g", m, from, to)
		},
	}

	grows := &Assert{Grows: &Grows{Metric: "softirqs.NET_RX", Min: 10}, During: &Window{Step: "flood", Skip: Duration(500e6)}, Pos: Pos{Line: 7}}
	r := s.Evaluate(rec, grows)
	if !r.Passed || r.Unmeasured || r.Kind != "grows" || r.Name != "softirqs.NET_RX grows" || r.Line != 7 ||
		r.Measured != "42 in 1.50-3.00s" || r.Bound != ">= 10" || !reflect.DeepEqual(r.Spans, [][2]float64{{1.5, 3}}) ||
		r.Window != `while "flood" runs (skipping its first 500ms)` || !r.TimingOnly {
		t.Errorf("grows during: %+v", r)
	}

	gone := &Assert{Grows: &Grows{Metric: "softirqs.NET_RX"}, During: &Window{Step: "never"}}
	if r := s.Evaluate(rec, gone); r.Passed || !r.Unmeasured || r.Measured != `step "never" did not run` {
		t.Errorf("grows during a step that did not run: %+v", r)
	}

	polls := &Assert{Polls: &Polls{NAPI: "vrx/rx-0", Context: PollContext{ByValue: map[string]string{"1": "kthread"}}, Min: &one},
		Each: "flip", Within: Duration(100e6)}
	r = s.Evaluate(rec, polls)
	want := "repetition 3 (1) at 2.01s: 0 kthread in the 100 ms after the action returned"
	if r.Passed || r.Unmeasured || r.Kind != "polls" || r.Name != "polls of vrx/rx-0 in the expected context" ||
		r.Measured != "1 of 2 windows in bounds (1 not measured: no snapshots at their edges)" ||
		r.Bound != ">= 1 in every window" || r.Detail != want || len(r.Spans) != 1 || r.Spans[0][0] != 2.01 {
		t.Errorf("polls each: %+v", r)
	}

	// Over the whole timeline, a record without snapshots is unmeasured.
	total := &Assert{Polls: &Polls{Dev: "vrx", Context: PollContext{Fixed: "softirq"}, Max: new(float64)}}
	if r := s.Evaluate(&fakeRecord{}, total); r.Passed || !r.Unmeasured || !strings.Contains(r.Measured, "no snapshot") {
		t.Errorf("polls without snapshots: %+v", r)
	}
}

// kindsYAML declares what every kind's minimal instance needs.
const kindsYAML = `name: kinds
topology:
  netns: [a]
  veths:
    - {name: vrx, address: 10.1.0.1/24, gro: true, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}
loads:
  udp: {kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9000}}
  rr: {kind: rr, from: {netns: a}, to: {address: 10.1.0.1, port: 7000}}
timeline:
  - {name: flood, start: [udp, rr]}
  - {name: flip, write: {path: /sys/class/net/vrx/threaded, values: ["1", "0"]}, every: 200ms, count: 4}
  - stop: [udp, rr]
asserts:
`

// minimal is a minimal valid instance of every kind.
var minimal = map[string]string{
	"no-splat":      `{no-splat: {}}`,
	"threads-while": `{threads-while: {prefix: napi/, path: /sys/class/net/vrx/threaded, equals: "1"}}`,
	"no-stall":      `{no-stall: {load: udp}}`,
	"grows":         `{grows: {metric: softirqs.NET_RX}}`,
	"delta":         `{delta: {metric: softirqs.NET_RX, max: 10}}`,
	"rate":          `{rate: {metric: softirqs.NET_RX, min: 1}}`,
	"ratio":         `{ratio: {num: softirqs.NET_RX, den: snmp.Udp.InDatagrams, max: 2}}`,
	"latency":       `{latency: {load: rr, p99: 10ms}}`,
	"polls":         `{polls: {napi: vrx/rx-0, context: softirq, min: 1}}`,
}

// TestAssertKinds: every kind in the table has a minimal instance that
// validates, and answers every method sensibly.
func TestAssertKinds(t *testing.T) {
	windowed := []string{"grows", "delta", "rate", "ratio", "polls"}
	timing := []string{"rate", "latency", "no-stall"}
	if len(minimal) != len(assertKinds) {
		t.Errorf("%d minimal instances for %d kinds", len(minimal), len(assertKinds))
	}
	for _, k := range assertKinds {
		y, ok := minimal[k.name]
		if !ok {
			t.Errorf("%s: no minimal instance", k.name)
			continue
		}
		s, err := Parse("k.yaml", []byte(kindsYAML+"  - "+y+"\n"), nil)
		if err != nil {
			t.Errorf("%s: %v", k.name, err)
			continue
		}
		a := s.Asserts[0]
		x, name := a.kind()
		if x == nil || name != k.name {
			t.Errorf("%s: kind %q", k.name, name)
			continue
		}
		if _, set := k.of(a); !set {
			t.Errorf("%s: of does not see the kind", k.name)
		}
		if e := explainAssert(a); e == "" || e == "?" {
			t.Errorf("%s: explain %q", k.name, e)
		}
		if x.name() == "" {
			t.Errorf("%s: no default name", k.name)
		}
		if got, want := x.timingOnly(), slices.Contains(timing, k.name); got != want {
			t.Errorf("%s: timingOnly %v, want %v", k.name, got, want)
		}
		w, ok := x.(spanned)
		if ok != slices.Contains(windowed, k.name) || a.Windowed() != ok {
			t.Errorf("%s: windowed %v", k.name, ok)
		}
		if ok != (len(x.metrics()) > 0) {
			t.Errorf("%s: metrics %v", k.name, x.metrics())
		}
		for _, m := range x.metrics() {
			if _, err := metrics.Parse(m); err != nil {
				t.Errorf("%s: metric %v", k.name, err)
			}
		}
		if ok {
			if lo, hi := w.bounds(); lo == nil && hi == nil {
				t.Errorf("%s: no bounds", k.name)
			}
			if _, ok := w.context(""); !ok {
				t.Errorf("%s: no context over a during: window", k.name)
			}
			fail := errors.New("no snapshots")
			if _, err := w.measure(func(string, float64, float64) (float64, float64, error) { return 0, 0, fail }, "softirq", 1, 2); !errors.Is(err, fail) {
				t.Errorf("%s: measure hid the record's error: %v", k.name, err)
			}
		}
		r := x.eval(s, &fakeRecord{}, a)
		if r.Kind != k.name || r.Name == "" || r.Measured == "" || r.Passed {
			t.Errorf("%s: on an empty record %+v", k.name, r)
		}
	}
}
