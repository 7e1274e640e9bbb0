package runner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// windowScenario names steps for windowed assertions to refer to; asserts
// is the scenario's asserts: section.
func windowScenario(t *testing.T, asserts string) *scenarios.Scenario {
	t.Helper()
	if asserts == "" {
		asserts = "  - no-splat: {}\n"
	}
	src := `name: w
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
timeline:
  - {name: warm, sleep: 1s}
  - {name: flip, write: {path: /sys/class/net/vrx/threaded, values: ["1", "0"]}, every: 100ms, count: 4}
  - {name: settle, sleep: 1s}
asserts:
` + asserts
	s, err := scenarios.Parse("w.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pollsAt is the napi_polls source with vrx/rx-0 polled kthread times by a
// napi/ thread and softirq times in softirq, cumulative.
func pollsAt(kthread, softirq int) wire.Sample {
	return wire.Sample{Values: map[string]string{wire.SourceNAPIPolls: fmt.Sprintf(
		"vrx rx-0 kthread 1 120 %d %d\nvrx rx-0 softirq 0 0 %d %d\n", kthread, 10*kthread, softirq, 10*softirq)}}
}

// at is a snapshot of vrx/rx-0's polls at host time host.
type at struct {
	host             float64
	kthread, softirq int
}

// windowTimeline is a timeline of s that ran warm (0-1s), flip (1-1.4s)
// and settle (1.4-2.4s) and took snaps.
func windowTimeline(s *scenarios.Scenario, snaps ...at) *timeline {
	tl := newTimeline(s, 1, nil, nil, nil)
	tl.start = time.Unix(1000, 0)
	sec := func(f float64) time.Time { return tl.start.Add(time.Duration(f * float64(time.Second))) }
	for _, sp := range []struct {
		name     string
		from, to float64
	}{{"warm", 0, 1}, {"flip", 1, 1.4}, {"settle", 1.4, 2.4}} {
		tl.spans = append(tl.spans, span{name: sp.name, start: sec(sp.from), end: sec(sp.to)})
	}
	for _, sn := range snaps {
		tl.samples = append(tl.samples, sampleRec{Group: edgesGroup, Host: sn.host, Data: pollsAt(sn.kthread, sn.softirq)})
	}
	return tl
}

func TestMetricIn(t *testing.T) {
	const kthread = "napi.polls.vrx.rx-0.kthread"
	other := sampleRec{Group: metricsGroup, Host: 1.0, Data: wire.Sample{Values: map[string]string{wire.SourceSoftirqs: ""}}}
	for _, tc := range []struct {
		name     string
		snaps    []at
		from, to float64
		delta    float64
		secs     float64
		err      string
	}{
		{"nearest snapshots", []at{{0.5, 0, 0}, {0.99, 2, 0}, {1.5, 10, 0}, {2.01, 32, 0}, {2.6, 50, 0}}, 1, 2, 30, 1.02, ""},
		{"a quarter of the window off", []at{{0.76, 2, 0}, {2.01, 32, 0}}, 1, 2, 30, 1.25, ""},
		{"further off than a quarter", []at{{0.5, 0, 0}, {2.0, 32, 0}}, 1, 2, 0, 0, "nearest snapshots of napi_polls at 0.50s and 2.00s"},
		{"end too far", []at{{1.0, 0, 0}, {1.7, 32, 0}}, 1, 2, 0, 0, "nearest snapshots"},
		{"short window: 20 ms", []at{{0.985, 0, 0}, {1.05, 4, 0}}, 1, 1.04, 4, 0.065, ""},
		{"short window too far", []at{{0.975, 0, 0}, {1.04, 4, 0}}, 1, 1.04, 0, 0, "nearest snapshots"},
		{"one snapshot", []at{{1.5, 0, 0}}, 1, 2, 0, 0, "one snapshot of napi_polls"},
		{"none", nil, 1, 2, 0, 0, "no snapshot of napi_polls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := windowTimeline(windowScenario(t, ""), tc.snaps...)
			// A snapshot without the source sits on the window's start.
			tl.samples = append(tl.samples, other)
			d, secs, err := tl.record().Near(kthread, tc.from, tc.to)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("metricIn = %v, %v, %v; want error %q", d, secs, err, tc.err)
				}
				return
			}
			if err != nil || d != tc.delta || !near(secs, tc.secs) {
				t.Errorf("metricIn = %v over %vs (%v), want %v over %vs", d, secs, err, tc.delta, tc.secs)
			}
		})
	}
}

// TestMetricInAcrossEdge: a periodic snapshot read while a step that starts
// the window ran is nearest its start, yet may hold the step's change; the
// edge snapshot read just before is the window's start (threaded-busy-poll on
// 7.3: napi-get's threaded went 2 -> 0 in the step, the delta read 0).
func TestMetricInAcrossEdge(t *testing.T) {
	const kthread = "napi.polls.vrx.rx-0.kthread"
	tl := windowTimeline(windowScenario(t, ""))
	for _, s := range []struct {
		guest, took float64
		kthread     int
	}{{10.959, 0.04, 0}, {11.019, 0.06, 7}, {12.05, 0.02, 50}} {
		d := pollsAt(s.kthread, 0)
		d.T, d.Took = s.guest-s.took/2, s.took // placed at guest - 10 s
		tl.samples = append(tl.samples, sampleRec{Group: edgesGroup, Sent: s.guest - 10 - 0.1, Host: s.guest - 10 + 0.01, Data: d})
	}
	d, _, err := tl.record().Near(kthread, 1, 2)
	if err != nil || d != 50 {
		t.Fatalf("metricIn = %v (%v), want 50: from the snapshot read before 1s, not the one read across it", d, err)
	}
}

// TestMetricInDuringStep: the snapshot taken just before a step that
// starts a window is its start, even where the guest clock places it a few
// ms across the step's start; one read while the step ran is neither side
// (7.3 beside a build: a napi-get delta 0 FAILed threaded-busy-poll).
func TestMetricInDuringStep(t *testing.T) {
	const kthread = "napi.polls.vrx.rx-0.kthread"
	tl := windowTimeline(windowScenario(t, ""))
	tl.iters[&scenarios.Step{}] = []iteration{{start: 1, done: 1.12}}
	for _, s := range []struct {
		sent, host, guest, took float64
		kthread                 int
	}{
		{0.78, 1.0, 10.91, 0.2, 0},   // the edge snapshot: its reply came before the step began
		{1.02, 1.09, 11.06, 0.04, 7}, // read while the step ran, nearer the edge
		{1.95, 2.0, 11.95, 0.02, 50},
	} {
		d := pollsAt(s.kthread, 0)
		d.T, d.Took = s.guest-s.took/2, s.took // placed at guest - 10 s: the first straddles 1 s
		tl.samples = append(tl.samples, sampleRec{Group: edgesGroup, Sent: s.sent, Host: s.host, Data: d})
	}
	d, _, err := tl.record().Near(kthread, 1, 2)
	if err != nil || d != 50 {
		t.Fatalf("metricIn = %v (%v), want 50: from the snapshot taken before the step, not the one read during it", d, err)
	}
}

// TestMetricInGuestClock: a slow guest's replies arrive late; its snapshots
// are placed where it read them, on its own clock, and the rate's seconds
// are the guest's (the CI failure: replies 0.2 s late on a debug kernel
// made a settled window unmeasurable).
func TestMetricInGuestClock(t *testing.T) {
	const kthread = "napi.polls.vrx.rx-0.kthread"
	tl := windowTimeline(windowScenario(t, ""))
	// guest uptime = host time + 10 s; the first reply is prompt (it sets the
	// offset), the edges' replies come 0.3 s late.
	for _, s := range []struct {
		host, guest, took float64
		kthread           int
	}{{0.52, 10.5, 0.01, 0}, {1.32, 11.0, 0.02, 10}, {2.35, 12.0, 0.02, 50}} {
		d := pollsAt(s.kthread, 0)
		d.T, d.Took = s.guest, s.took
		tl.samples = append(tl.samples, sampleRec{Group: edgesGroup, Host: s.host, Data: d})
	}
	d, secs, err := tl.record().Near(kthread, 1, 2)
	if err != nil || d != 40 || !near(secs, 1.0) {
		t.Fatalf("metricIn = %v over %vs (%v), want 40 over 1s of the guest's clock", d, secs, err)
	}
	// Without guest times the same replies are too far from the edges.
	for i := range tl.samples {
		tl.samples[i].Data.T = 0
	}
	if _, _, err := tl.record().Near(kthread, 1, 2); err == nil || !strings.Contains(err.Error(), "nearest snapshots") {
		t.Errorf("metricIn on arrival times = %v, want nearest snapshots too far", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestMetricAt(t *testing.T) {
	tl := windowTimeline(windowScenario(t, ""), at{1.0001, 1, 0}, at{1.0, 5, 0}, at{1.04, 9, 0}, at{1.0399, 100, 0})
	d, secs, err := tl.record().At("napi.polls.vrx.rx-0.kthread", 1.0, 1.04)
	if err != nil || d != 4 || !near(secs, 0.04) {
		t.Errorf("metricAt = %v over %vs (%v), want 4 over 0.04s from the snapshots at exactly 1.0 and 1.04", d, secs, err)
	}
	if _, _, err := tl.record().At("napi.polls.vrx.rx-0.kthread", 1.0, 1.05); err == nil {
		t.Error("metricAt measured without a snapshot at 1.05s")
	}
}

func TestEvalDuring(t *testing.T) {
	for _, tc := range []struct {
		name       string
		assert     string
		snaps      []at
		drop       string // a step that did not run
		passed     bool
		unmeasured bool
		measured   string
		spans      [][2]float64
	}{
		{name: "during a step", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: kthread, min: 1}}`,
			snaps: []at{{0.5, 0, 0}, {1.0, 2, 0}, {1.2, 5, 0}, {1.4, 10, 0}, {2.4, 10, 0}}, passed: true,
			measured: "8 in 1.00-1.40s", spans: [][2]float64{{1, 1.4}}},
		{name: "fails", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: softirq, max: 0}}`,
			snaps: []at{{1.0, 2, 3}, {1.4, 10, 4}}, measured: "1 in 1.00-1.40s", spans: [][2]float64{{1, 1.4}}},
		{name: "after a step, skipping", assert: `{during: {after: warm, for: 400ms, skip: 100ms}, polls: {napi: vrx/rx-0, context: kthread, max: 5}}`,
			snaps: []at{{1.0, 0, 0}, {1.1, 2, 0}, {1.4, 6, 0}}, passed: true, measured: "4 in 1.10-1.40s", spans: [][2]float64{{1.1, 1.4}}},
		{name: "from one step to another", assert: `{during: {from: flip, to: settle}, polls: {napi: vrx/rx-0, context: any, min: 20}}`,
			snaps: []at{{1.0, 0, 0}, {2.4, 10, 10}}, passed: true, measured: "20 in 1.00-2.40s", spans: [][2]float64{{1, 2.4}}},
		{name: "rate", assert: `{during: {step: settle}, rate: {metric: napi.polls.vrx.rx-0.softirq, min: 100}}`,
			snaps: []at{{1.4, 0, 0}, {2.4, 0, 50}}, measured: "50/s in 1.40-2.40s", spans: [][2]float64{{1.4, 2.4}}},
		{name: "ratio", assert: `{during: {step: flip}, ratio: {num: napi.packets.vrx.rx-0.any, den: napi.polls.vrx.rx-0.any, min: 10}}`,
			snaps: []at{{1.0, 1, 1}, {1.4, 3, 4}}, passed: true, measured: "10 in 1.00-1.40s", spans: [][2]float64{{1, 1.4}}},
		// Measured: the denominator stayed put in the window, the kernel's doing.
		{name: "ratio whose denominator did not change", assert: `{during: {step: flip}, ratio: {num: napi.packets.vrx.rx-0.any, den: napi.polls.vrx.rx-0.any, min: 10}}`,
			snaps: []at{{1.0, 1, 1}, {1.4, 1, 1}}, measured: "napi.polls.vrx.rx-0.any did not change", spans: [][2]float64{{1, 1.4}}},
		{name: "nearest snapshots too far", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: kthread, min: 1}}`,
			snaps: []at{{0.7, 0, 0}, {1.8, 10, 0}}, unmeasured: true, spans: [][2]float64{{1, 1.4}},
			measured: "nearest snapshots of napi_polls at 0.70s and 1.80s for the window 1.00-1.40s"},
		{name: "one snapshot near the window", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: kthread, min: 1}}`,
			snaps: []at{{0.5, 0, 0}, {2.4, 10, 0}}, unmeasured: true, spans: [][2]float64{{1, 1.4}},
			measured: "one snapshot of napi_polls in 1.00-1.40s"},
		{name: "no snapshots", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: kthread, min: 1}}`,
			unmeasured: true, spans: [][2]float64{{1, 1.4}}, measured: "no snapshot of napi_polls"},
		{name: "the step did not run", assert: `{during: {step: flip}, polls: {napi: vrx/rx-0, context: kthread, min: 1}}`,
			snaps: []at{{1.0, 0, 0}, {1.4, 10, 0}}, drop: "flip", unmeasured: true, measured: `step "flip" did not run`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := windowScenario(t, "  - "+tc.assert)
			tl := windowTimeline(s, tc.snaps...)
			if tc.drop != "" {
				tl.spans = slices.DeleteFunc(tl.spans, func(sp span) bool { return sp.name == tc.drop })
			}
			r := tl.s.Evaluate(tl.record(), s.Asserts[0])
			if r.Passed != tc.passed || r.Unmeasured != tc.unmeasured || r.Measured != tc.measured || !reflect.DeepEqual(r.Spans, tc.spans) {
				t.Errorf("passed %v unmeasured %v measured %q spans %v, want %v %v %q %v",
					r.Passed, r.Unmeasured, r.Measured, r.Spans, tc.passed, tc.unmeasured, tc.measured, tc.spans)
			}
		})
	}
}

// TestEvalEach checks each: repetitions measured between their own edge
// snapshots, with the context picked by the value written.
func TestEvalEach(t *testing.T) {
	const assert = `{each: flip, within: 100ms, polls: {napi: vrx/rx-0, context: {"1": kthread, "0": softirq}, min: 1}}`
	type rep struct {
		value    string
		from, to at // the edge snapshots, host < 0: not taken
	}
	for _, tc := range []struct {
		name             string
		reps             []rep
		passed, unmeasur bool
		measured, detail string
	}{
		{name: "every flip moves the polling", reps: []rep{
			{"1", at{1.0, 0, 0}, at{1.1, 3, 0}}, {"0", at{1.1, 3, 0}, at{1.2, 3, 2}},
			{"1", at{1.2, 3, 2}, at{1.3, 5, 2}}, {"0", at{1.3, 5, 2}, at{1.4, 5, 4}}},
			passed: true, measured: "4 of 4 windows in bounds"},
		{name: "one flip does not take", reps: []rep{
			{"1", at{1.0, 0, 0}, at{1.1, 3, 0}}, {"0", at{1.1, 3, 0}, at{1.2, 3, 2}},
			{"1", at{1.2, 3, 2}, at{1.3, 3, 6}}, {"0", at{1.3, 3, 6}, at{1.4, 3, 8}}},
			measured: "3 of 4 windows in bounds", detail: "repetition 3 (1) at 1.20s: 0 kthread in the 100 ms after the action returned"},
		{name: "a window without snapshots is not evidence", reps: []rep{
			{"1", at{1.0, 0, 0}, at{1.1, 3, 0}}, {"0", at{-1, 0, 0}, at{1.2, 3, 2}},
			{"1", at{1.2, 3, 2}, at{1.3, 5, 2}}, {"0", at{1.3, 5, 2}, at{1.32, 5, 4}}},
			passed: true, measured: "2 of 2 windows in bounds (2 not measured: no snapshots at their edges)"},
		{name: "most windows unmeasured", reps: []rep{
			{"1", at{1.0, 0, 0}, at{1.1, 3, 0}}, {"0", at{-1, 0, 0}, at{1.2, 3, 2}},
			{"1", at{-1, 0, 0}, at{1.3, 5, 2}}, {"0", at{1.3, 5, 2}, at{-1, 5, 4}}},
			unmeasur: true, measured: "1 of 1 windows in bounds (3 not measured: no snapshots at their edges)"},
		{name: "values the assertion does not name are skipped", reps: []rep{
			{"2", at{1.0, 0, 0}, at{1.1, 0, 0}}, {"1", at{1.1, 0, 0}, at{1.2, 4, 0}}},
			passed: true, measured: "1 of 1 windows in bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := windowScenario(t, "  - "+assert)
			tl := windowTimeline(s)
			st := s.StepNames()["flip"]
			for i, r := range tc.reps {
				it := iteration{start: r.from.host - 0.01, done: r.from.host, until: 1.4, value: r.value, from: r.from.host, to: r.to.host}
				for _, e := range []at{r.from, r.to} {
					if e.host >= 0 {
						tl.samples = append(tl.samples, sampleRec{Group: edgesGroup, Host: e.host + float64(i)*1e-6, Data: pollsAt(e.kthread, e.softirq)})
					}
				}
				if it.from >= 0 {
					it.from += float64(i) * 1e-6
				}
				if it.to >= 0 {
					it.to += float64(i) * 1e-6
				}
				tl.iters[st] = append(tl.iters[st], it)
			}
			tl.end = tl.start.Add(3 * time.Second)
			r := tl.s.Evaluate(tl.record(), s.Asserts[0])
			if r.Passed != tc.passed || r.Unmeasured != tc.unmeasur || r.Measured != tc.measured || r.Detail != tc.detail {
				t.Errorf("passed %v unmeasured %v measured %q detail %q,\nwant %v %v %q %q", r.Passed, r.Unmeasured, r.Measured, r.Detail,
					tc.passed, tc.unmeasur, tc.measured, tc.detail)
			}
		})
	}
}
