package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"napilab/internal/wire"
	"napilab/scenarios"
)

const qdiscScenario = `name: q
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
timeline:
  - {qdisc: {dev: vtx, netns: a, kind: [pfifo, fq_codel], limit: 50}, every: 10ms, count: 3}
  - qdisc: {dev: eth0, op: delete}
asserts:
  - grows: {metric: qdisc.a/vtx.requeues, min: 5}
  - delta: {metric: qdisc.a/vtx.drops, max: 0}
  - delta: {metric: qdisc.eth0.backlog, max: 0}
`

// fakeAgent answers every request on the guest end of a pipe with success
// and sends what it was asked on calls.
func fakeAgent(t *testing.T) (*control, <-chan *wire.Message) {
	return answeringAgent(t, wire.Message{})
}

// TestQdiscAction checks the wire calls of a qdisc step: the default op,
// the kinds cycled per repetition, the limit, and a delete.
func TestQdiscAction(t *testing.T) {
	s, err := scenarios.Parse("q.yaml", []byte(qdiscScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, calls := fakeAgent(t)
	tl := newTimeline(s, 1, ctl, nil, nil)
	want := []wire.Qdisc{
		{Dev: "vtx", Netns: "a", Op: "replace", Kind: "pfifo", Limit: 50},
		{Dev: "vtx", Netns: "a", Op: "replace", Kind: "fq_codel", Limit: 50},
		{Dev: "vtx", Netns: "a", Op: "replace", Kind: "pfifo", Limit: 50},
		{Dev: "eth0", Op: "delete"},
	}
	for i, w := range want {
		st := s.Timeline[0]
		if w.Op == "delete" {
			st = s.Timeline[1]
		}
		if err := tl.action(context.Background(), st, i); err != nil {
			t.Fatal(err)
		}
		m := <-calls
		var got wire.Qdisc
		if err := json.Unmarshal(m.Args, &got); err != nil || m.Op != wire.OpQdisc || got != w {
			t.Errorf("call %d: %s %s (%v), want %+v", i, m.Op, m.Args, err, w)
		}
	}
}

// qdiscText is a qdisc source with vtx's root pfifo at the given counts.
func qdiscText(requeues, drops int) string {
	return fmt.Sprintf("vtx root 8001: pfifo packets 100 bytes 6400 drops %d overlimits 0 requeues %d backlog 0 qlen 0\n"+
		"lo root 0: noqueue packets 0 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0", drops, requeues)
}

// TestQdiscMetricAsserts checks that the snapshots before and after the
// timeline read the qdisc sources the asserts need, and that grows and
// delta read them.
func TestQdiscMetricAsserts(t *testing.T) {
	s, err := scenarios.Parse("q.yaml", []byte(qdiscScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s, 1, nil, nil, nil)
	srcs := tl.metricSources()
	for _, src := range []string{"qdisc:a", "qdisc"} {
		if !slices.Contains(srcs, src) {
			t.Errorf("metric snapshots read %q, not %s", srcs, src)
		}
	}
	eth0 := "eth0 root 0: mq packets 9 bytes 900 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0"
	for i, text := range []string{qdiscText(2, 0), qdiscText(9, 0)} {
		tl.samples = append(tl.samples, sampleRec{Group: metricsGroup,
			Data: wire.Sample{T: float64(i), Values: map[string]string{"qdisc:a": text, "qdisc": eth0}}})
	}
	for i, want := range []struct {
		passed   bool
		measured string
	}{{true, "+7"}, {true, "+0"}, {true, "+0"}} {
		r := tl.s.Evaluate(tl.record(), s.Asserts[i])
		if r.Passed != want.passed || r.Measured != want.measured {
			t.Errorf("assert %d %s: passed %v measured %q, want %v %q", i, r.Name, r.Passed, r.Measured, want.passed, want.measured)
		}
	}
	tl.samples[1].Data.Values["qdisc:a"] = qdiscText(3, 4)
	if r := tl.s.Evaluate(tl.record(), s.Asserts[0]); r.Passed {
		t.Errorf("requeues +1 passed grows min 5: %s", r.Measured)
	}
	if r := tl.s.Evaluate(tl.record(), s.Asserts[1]); r.Passed {
		t.Errorf("drops +4 passed delta max 0: %s", r.Measured)
	}
}
