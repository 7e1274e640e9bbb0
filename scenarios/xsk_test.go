package scenarios

import (
	"strings"
	"testing"
	"time"
)

const xskScenario = `name: t
machine: {cpus: 2}
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
  netns: [c]
  veths:
    - {name: vs, address: 10.1.0.2/24, peer: {name: vc, netns: c, address: 10.1.0.1/24}}
loads:
  rr:
    kind: xsk
    from: {netns: c}
    to: {address: 10.1.0.2, port: 7000}
    busy_poll: 50
    xsk: {mode: rr, app_delay: 30us, receive: busy, prefer_busy_poll: true, busy_poll_budget: 64, batch: 16, poll_cpu: 1}
  flood:
    kind: xsk
    from: host
    to: {nic: eth0, port: 9000}
    xsk: {mode: sink, queue: 1, zero_copy: true}
timeline:
  - start: [rr, flood]
asserts:
  - latency: {load: rr, p99: 10ms}
perf:
  budgets:
    - {metric: rr.p95_us, max_rise: 20%}
`

func TestXSKLoads(t *testing.T) {
	s, err := Parse("t.yaml", []byte(xskScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		load, dev, netns string
		latency          bool
		explain          string
	}{
		{"rr", "vs", "", true, "AF_XDP rr on vs queue 0, receive busy, batch 16, 30µs busy-wait per request, SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET 64, rx kicked from cpu 1"},
		{"flood", "eth0", "", false, "AF_XDP sink on eth0 queue 1, receive blocking, batch 64, zero-copy if the driver takes it"},
	} {
		t.Run(tc.load, func(t *testing.T) {
			l := s.Loads[tc.load]
			if l.SinkDev != tc.dev || l.SinkNetns != tc.netns {
				t.Errorf("sink on %q in %q, want %q in %q", l.SinkDev, l.SinkNetns, tc.dev, tc.netns)
			}
			if l.HasLatency() != tc.latency {
				t.Errorf("HasLatency %v, want %v", l.HasLatency(), tc.latency)
			}
			if got := explainXSK(l); !strings.Contains(got, tc.explain) {
				t.Errorf("explain %q lacks %q", got, tc.explain)
			}
		})
	}
	if d := s.Loads["rr"].XSK.AppDelay.D(); d != 30*time.Microsecond {
		t.Errorf("app_delay %v, want 30us", d)
	}
}

func TestOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name, load string
		ok         bool
	}{
		{"xsk rr with a rate", "{kind: xsk, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, rate: 2000, open_loop: true, xsk: {mode: rr}}", true},
		{"udp rr with a rate", "{kind: rr, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, rate: 2000, open_loop: true}", true},
		{"no rate", "{kind: rr, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, open_loop: true}", false},
		{"tcp rr", "{kind: rr, proto: tcp, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, rate: 10, open_loop: true}", false},
		{"a udp flood", "{kind: udp, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, rate: 10, open_loop: true}", false},
		{"xsk sink", "{kind: xsk, from: {netns: c}, to: {address: 10.1.0.2, port: 7000}, rate: 10, open_loop: true, xsk: {mode: sink}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: t\ntopology:\n  netns: [c]\n  veths:\n    - {name: vs, address: 10.1.0.2/24, peer: {name: vc, netns: c, address: 10.1.0.1/24}}\n" +
				"loads:\n  l: " + tc.load + "\ntimeline:\n  - start: l\n"
			s, err := Parse("t.yaml", []byte(src), nil)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				s.Explain(&b)
				if !strings.Contains(b.String(), "open loop") {
					t.Errorf("explain does not say open loop:\n%s", b.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "t.yaml:7:6: load l: open_loop needs an rr client over udp") {
				t.Errorf("error = %v", err)
			}
		})
	}
}

func TestNullLeavesOptionUnset(t *testing.T) {
	src := strings.Replace(xskScenario, "poll_cpu: 1}", "poll_cpu: null}", 1)
	s, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Loads["rr"].XSK.PollCPU != nil {
		t.Errorf("poll_cpu: null gave %d", *s.Loads["rr"].XSK.PollCPU)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(xskScenario, "batch: 16,", "batch: null,", 1)), nil); err == nil ||
		!strings.Contains(err.Error(), "want an integer") {
		t.Errorf("null for a required integer: %v", err)
	}
}
