package runner

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"napilab/internal/wire"
	"napilab/scenarios"
)

const napiScenario = `name: n
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
timeline:
  - {napi: {dev: eth0, threaded: [busy-poll, disabled]}, every: 10ms, count: 2}
  - napi: {dev: eth0, queue: 1, defer_hard_irqs: 2, gro_flush_timeout: 200us, irq_suspend_timeout: 20ms}
`

// TestNAPIAction checks the wire calls of napi steps: the threaded modes
// cycled per repetition, the queue, and the timeouts in nanoseconds.
func TestNAPIAction(t *testing.T) {
	s, err := scenarios.Parse("n.yaml", []byte(napiScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, calls := fakeAgent(t)
	tl := newTimeline(s, 1, ctl, nil, nil)
	one, two, groNs, suspendNs := 1, uint32(2), uint64(200_000), uint64(20_000_000)
	for i, tc := range []struct {
		step *scenarios.Step
		iter int
		want wire.NAPI
	}{
		{s.Timeline[0], 0, wire.NAPI{Dev: "eth0", Threaded: "busy-poll"}},
		{s.Timeline[0], 1, wire.NAPI{Dev: "eth0", Threaded: "disabled"}},
		{s.Timeline[1], 0, wire.NAPI{Dev: "eth0", Queue: &one, DeferHardIRQs: &two, GROFlushTimeout: &groNs, IRQSuspendTimeout: &suspendNs}},
	} {
		if err := tl.action(context.Background(), tc.step, tc.iter); err != nil {
			t.Fatal(err)
		}
		m := <-calls
		var got wire.NAPI
		if err := json.Unmarshal(m.Args, &got); err != nil || m.Op != wire.OpNAPI || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("call %d: %s %s (%v), want %+v", i, m.Op, m.Args, err, tc.want)
		}
	}
}

// TestNAPIMetricAsserts checks that the snapshots around the timeline read
// the napi source and that delta reads a NAPI's threaded mode and kthread.
func TestNAPIMetricAsserts(t *testing.T) {
	s, err := scenarios.Parse("n.yaml", []byte(napiScenario+`asserts:
  - delta: {metric: napi.eth0.rx-0.threaded, min: 2, max: 2}
  - grows: {metric: napi.eth0.rx-0.pid}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s, 1, nil, nil, nil)
	if srcs := tl.metricSources(); !slices.Contains(srcs, "napi") {
		t.Errorf("metric snapshots read %q, not napi", srcs)
	}
	before := "eth0 rx-0 id 8193 ifindex 2 irq 27 threaded 0 defer_hard_irqs 0 gro_flush_timeout 0 irq_suspend_timeout 0"
	after := "eth0 rx-0 id 8193 ifindex 2 irq 27 pid 311 threaded 2 defer_hard_irqs 0 gro_flush_timeout 0 irq_suspend_timeout 0"
	for i, text := range []string{before, after} {
		tl.samples = append(tl.samples, sampleRec{Group: metricsGroup,
			Data: wire.Sample{T: float64(i), Values: map[string]string{"napi": text}}})
	}
	for i, want := range []string{"+2", "+311"} {
		if r := tl.s.Evaluate(tl.record(), s.Asserts[i]); !r.Passed || r.Measured != want {
			t.Errorf("assert %d %s: passed %v measured %q, want a pass at %s", i, r.Name, r.Passed, r.Measured, want)
		}
	}
	tl.samples[1].Data.Values["napi"] = before
	if r := tl.s.Evaluate(tl.record(), s.Asserts[0]); r.Passed {
		t.Errorf("threaded 0 -> 0 passed delta 2..2: %s", r.Measured)
	}
}
