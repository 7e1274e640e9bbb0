package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// pollsAgent is a fake guest agent: it takes writes, and answers every
// snapshot after took with napi_polls where vrx/rx-0 was polled once more
// since the last one, by a napi/ thread while threaded was last written
// "1" and in softirq otherwise. It answers requests concurrently, as the
// agent does.
type pollsAgent struct {
	took time.Duration

	mu               sync.Mutex
	threaded         string
	kthread, softirq int
}

func (a *pollsAgent) start(t *testing.T) *control {
	t.Helper()
	host, guest := net.Pipe()
	conn := wire.NewConn(guest)
	go func() {
		for {
			m, err := conn.Recv()
			if err != nil {
				return
			}
			go func() { conn.Send(a.answer(m)) }()
		}
	}()
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close(); guest.Close() })
	return ctl
}

func (a *pollsAgent) answer(m *wire.Message) *wire.Message {
	switch m.Op {
	case wire.OpWrite:
		var f wire.File
		if err := json.Unmarshal(m.Args, &f); err != nil {
			return &wire.Message{ID: m.ID, Error: err.Error()}
		}
		a.mu.Lock()
		a.threaded = f.Value
		a.mu.Unlock()
		return &wire.Message{ID: m.ID}
	case wire.OpSample:
		time.Sleep(a.took)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.threaded == "1" {
			a.kthread++
		} else {
			a.softirq++
		}
		return &wire.Message{ID: m.ID, Data: wire.Encode(pollsAt(a.kthread, a.softirq))}
	}
	return &wire.Message{ID: m.ID, Error: "unexpected op " + m.Op}
}

// edgeRun runs a scenario's timeline against a pollsAgent whose snapshots
// take took.
func edgeRun(t *testing.T, src string, took time.Duration) (*scenarios.Scenario, *timeline) {
	t.Helper()
	s, err := scenarios.Parse("e.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	agent := &pollsAgent{took: took}
	tl := newTimeline(s, 1, agent.start(t), nil, func(string, ...any) {})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tl.run(ctx); err != nil {
		t.Fatal(err)
	}
	return s, tl
}

// edgeHosts returns the host times of the edge snapshots, in order.
func edgeHosts(tl *timeline) []float64 {
	var out []float64
	for _, sm := range tl.samples {
		if sm.Group == edgesGroup {
			out = append(out, sm.Host)
		}
	}
	return out
}

func TestPlanEdges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		asserts string
		want    map[string]*stepEdges
	}{
		{"none", `  - grows: {metric: softirqs.NET_RX, min: 1}`, map[string]*stepEdges{}},
		{"during a step", `  - {during: {step: flip}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"flip": {start: true, end: true}}},
		{"after a step", `  - {during: {after: flip, for: 1s, skip: 200ms}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"flip": {after: []time.Duration{200 * time.Millisecond, time.Second}}}},
		{"after a step without skip", `  - {during: {after: flip, for: 1s}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"flip": {after: []time.Duration{0, time.Second}}}},
		{"from one step to another", `  - {during: {from: warm, to: settle}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"warm": {start: true}, "settle": {end: true}}},
		{"during a step skipping its start", `  - {during: {step: flip, skip: 100ms}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"flip": {start: true, end: true, afterStart: []time.Duration{100 * time.Millisecond}}}},
		{"from-to skipping its start", `  - {during: {from: warm, to: settle, skip: 300ms}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"warm": {start: true, afterStart: []time.Duration{300 * time.Millisecond}}, "settle": {end: true}}},
		{"each", `  - {each: flip, within: 80ms, polls: {napi: vrx/rx-0, context: {"1": kthread, "0": softirq}, min: 1}}`,
			map[string]*stepEdges{"flip": {within: 80 * time.Millisecond}}},
		{"each twice: the shorter window", `  - {each: flip, within: 80ms, grows: {metric: softirqs.NET_RX}}
  - {each: flip, within: 30ms, grows: {metric: softirqs.NET_TX}}
  - {each: flip, within: 90ms, grows: {metric: softirqs.NET_TX}}`,
			map[string]*stepEdges{"flip": {within: 30 * time.Millisecond}}},
		{"windows combined", `  - {during: {step: flip}, grows: {metric: softirqs.NET_RX}}
  - {during: {after: flip, for: 500ms}, grows: {metric: softirqs.NET_RX}}
  - {each: flip, within: 50ms, grows: {metric: softirqs.NET_RX}}
  - {during: {from: flip, to: settle}, grows: {metric: softirqs.NET_RX}}`,
			map[string]*stepEdges{"flip": {start: true, end: true, after: []time.Duration{0, 500 * time.Millisecond}, within: 50 * time.Millisecond},
				"settle": {end: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planEdges(windowScenario(t, tc.asserts))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planEdges = %s, want %s", showEdges(got), showEdges(tc.want))
			}
		})
	}
}

func showEdges(m map[string]*stepEdges) string {
	var b strings.Builder
	for name, e := range m {
		fmt.Fprintf(&b, "%s:%+v ", name, *e)
	}
	return "{" + strings.TrimSpace(b.String()) + "}"
}

const edgeTopology = `topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
`

// TestEachEdgeSnapshots runs a watched step through the timeline: every
// repetition gets its two edge snapshots, in order, between it and the
// next, and watching does not push the repetitions off their schedule.
func TestEachEdgeSnapshots(t *testing.T) {
	// A snapshot takes 60ms, so a window (150ms) that starts after one
	// would end past the next repetition (200ms): it is cut short just
	// before that is due. The period leaves room for a loaded host (CI, a
	// kernel build beside it) to schedule.
	const every, took = 200 * time.Millisecond, 60 * time.Millisecond
	s, tl := edgeRun(t, `name: e
`+edgeTopology+`timeline:
  - {name: flip, write: {path: /sys/class/net/vrx/threaded, values: ["1", "0"]}, every: 200ms, count: 4}
asserts:
  - each: flip
    within: 150ms
    polls: {napi: vrx/rx-0, context: {"1": kthread, "0": softirq}, min: 1}
`, took)
	st := s.StepNames()["flip"]
	iters := tl.iters[st]
	if len(iters) != 4 || tl.steps[0].Iterations != 4 {
		t.Fatalf("%d iterations recorded, %d run, want 4", len(iters), tl.steps[0].Iterations)
	}
	edges := edgeHosts(tl)
	if len(edges) != 2*len(iters) {
		t.Fatalf("%d edge snapshots, want 2 for each of %d repetitions", len(edges), len(iters))
	}
	for i, it := range iters {
		if it.from < 0 || it.to < 0 {
			t.Fatalf("repetition %d: snapshots at %v and %v, want both taken", i+1, it.from, it.to)
		}
		if it.from != edges[2*i] || it.to != edges[2*i+1] {
			t.Errorf("repetition %d: snapshots at %v-%v, want the edge snapshots %v-%v", i+1, it.from, it.to, edges[2*i], edges[2*i+1])
		}
		if !(it.start <= it.done && it.done <= it.from && it.from < it.to) {
			t.Errorf("repetition %d: started %v, returned %v, snapshots %v-%v: out of order", i+1, it.start, it.done, it.from, it.to)
		}
		if i > 0 && iters[i-1].to > it.start {
			t.Errorf("repetition %d started at %v, before the previous one's last snapshot at %v", i+1, it.start, iters[i-1].to)
		}
		if want := string("10"[i%2]); it.value != want {
			t.Errorf("repetition %d wrote %q, want %q", i+1, it.value, want)
		}
		// Watching may delay a repetition by the snapshot that ends the
		// previous window, never the schedule: repetition i stays due
		// i periods after the first, however late the host ran it.
		if i > 0 {
			if d := it.until - iters[0].until - float64(i)*every.Seconds(); d > 1e-6 || d < -1e-6 {
				t.Errorf("repetition %d is due %.3f ms off its period: the watching stretched the schedule", i+1, d*1000)
			}
			if it.start < iters[i-1].until-1e-6 {
				t.Errorf("repetition %d started at %v, before it was due at %v", i+1, it.start, iters[i-1].until)
			}
		}
	}
	r := tl.s.Evaluate(tl.record(), s.Asserts[0])
	if !r.Passed || r.Measured != "4 of 4 windows in bounds" {
		t.Errorf("passed %v, measured %q, want 4 of 4 windows in bounds", r.Passed, r.Measured)
	}
}

// TestSkipEdgeSnapshot checks that a window skipping the start of a step
// gets a snapshot where it begins, not only when the step starts.
func TestSkipEdgeSnapshot(t *testing.T) {
	s, tl := edgeRun(t, `name: e
`+edgeTopology+`timeline:
  - {name: hold, sleep: 500ms}
asserts:
  - during: {step: hold, skip: 100ms}
    polls: {napi: vrx/rx-0, context: softirq, min: 1}
`, 2*time.Millisecond)
	edges := edgeHosts(tl)
	if len(edges) != 3 {
		t.Fatalf("edge snapshots at %v, want at the start, 100ms in and at the end", edges)
	}
	from, to, err := s.Asserts[0].During.Resolve(tl.record())
	if err != nil {
		t.Fatal(err)
	}
	if !(edges[0] <= from && from <= edges[1] && edges[1] < to && to <= edges[2]) {
		t.Errorf("edge snapshots at %v for the window %v-%v, want one before it, one as it starts and one after it", edges, from, to)
	}
}
