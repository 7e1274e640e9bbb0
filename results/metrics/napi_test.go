package metrics

import (
	"strings"
	"testing"
)

// napiText is a napi source: eth0's two NAPIs in busy-poll mode with their
// kthreads, and a veth NAPI in netns-less softirq mode on a 6.12-like kernel.
const napiText = `eth0 rx-0 id 8193 ifindex 2 irq 27 pid 311 threaded 2 defer_hard_irqs 2 gro_flush_timeout 200000 irq_suspend_timeout 0
eth0 rx-1 id 8194 ifindex 2 irq 28 pid 312 threaded 2 defer_hard_irqs 2 gro_flush_timeout 200000 irq_suspend_timeout 0
vrx rx-0 id 8195 ifindex 5 defer_hard_irqs 0 gro_flush_timeout 0
`

func TestParseNAPI(t *testing.T) {
	s, err := ParseSource("napi", napiText)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		metric string
		want   float64
		ok     bool
	}{
		{"napi.eth0.rx-0.threaded", 2, true},
		{"napi.eth0.rx-1.pid", 312, true},
		{"napi.eth0.rx-1.irq", 28, true},
		{"napi.eth0.rx-0.gro_flush_timeout", 200000, true},
		{"napi.vrx.rx-0.pid", 0, true}, // no kthread
		{"napi.vrx.rx-0.irq", 0, false},
		{"napi.vrx.rx-0.threaded", 0, false}, // the kernel did not say
		{"napi.eth0.rx-2.pid", 0, false},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			m, err := Parse(tc.metric)
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := m.From(s); got != tc.want || ok != tc.ok {
				t.Errorf("From = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if s, err := ParseSource("napi:a#2", ""); err != nil || len(s) != 0 {
		t.Errorf("empty napi source: %v %v, want no fields", s, err)
	}
}

func TestParseNAPIErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"odd pairs", "eth0 rx-0 id", "want \"dev napi\" and name/value pairs"},
		{"unknown field", "eth0 rx-0 weight 64", "unknown field weight"},
		{"not a number", "eth0 rx-0 pid -1", "pid"},
		{"twice", "eth0 rx-0 id 1\neth0 rx-0 id 2", "a second rx-0 NAPI of eth0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSource("napi", tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestParseNAPIMetric(t *testing.T) {
	for _, tc := range []struct {
		name, source, field, err string
	}{
		{"napi.eth0.rx-0.threaded", "napi", "eth0.rx-0.threaded", ""},
		{"napi.a/vtx.rx-1.pid", "napi:a", "vtx.rx-1.pid", ""},
		{"napi.eth0.100.rx-0.pid", "napi", "eth0.100.rx-0.pid", ""}, // a VLAN device's dot
		{"napi.eth0.8193.pid", "napi", "eth0.8193.pid", ""},
		{"napi.cpu_seconds", "tasks:napi/", "total", ""},
		{"napi.polls.eth0.rx-0.kthread", "napi_polls", "", ""},
		{"napi.eth0.rx-0.weight", "", "", `unknown napi field "weight"`},
		{"napi.eth0.any.pid", "", "", `bad napi "any"`},
		{"napi.eth0.rx-0.pid.cpu1", "", "", `unknown napi field "cpu1"`},
		{"napi./vtx.rx-0.pid", "", "", "empty netns"},
		{"napi.a/.rx-0.pid", "", "", `bad device ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.name)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || m.Source != tc.source || tc.field != "" && m.Field != tc.field {
				t.Errorf("got %+v (%v), want source %q field %q", m, err, tc.source, tc.field)
			}
		})
	}
}

func TestSourceNetns(t *testing.T) {
	for _, tc := range []struct {
		src, ns string
		ok      bool
	}{{"napi:a", "a", true}, {"qdisc:b", "b", true}, {"napi", "", false}, {"napi_polls", "", false}, {"file:/x", "", false}} {
		if ns, ok := SourceNetns(tc.src); ns != tc.ns || ok != tc.ok {
			t.Errorf("SourceNetns(%q) = %q %v, want %q %v", tc.src, ns, ok, tc.ns, tc.ok)
		}
	}
}
