package scenarios

import (
	"slices"
	"strings"
	"testing"
)

// qdiscBase declares a two-queue NIC and a one-queue veth whose peer sits
// in netns a; the step under test is line 8.
const qdiscBase = `name: t
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, queues: 1, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
timeline:
  - sleep: 1s
`

func TestQdiscStep(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		op         string // the op after defaults
		explain    string
	}{
		{"pfifo with a limit", "  - qdisc: {dev: vtx, netns: a, op: replace, kind: pfifo, limit: 1000}\n", "replace",
			"replace the root qdisc of vtx in netns a with pfifo limit 1000"},
		{"default op", "  - qdisc: {dev: eth0, kind: fq_codel}\n", "replace", "replace the root qdisc of eth0 with fq_codel"},
		{"mq", "  - qdisc: {dev: eth0, kind: mq}\n", "replace", "replace the root qdisc of eth0 with mq"},
		{"delete", "  - qdisc: {dev: vtx, netns: a, op: delete}\n", "delete",
			"delete the root qdisc of vtx in netns a (back to the default)"},
		{"add", "  - qdisc: {dev: vrx, op: add, kind: pfifo_fast}\n", "add", "add pfifo_fast as the root qdisc of vrx"},
		{"cycle", "  - {qdisc: {dev: eth0, kind: [pfifo, noqueue, mq]}, every: 100ms, count: 3}\n", "replace",
			"replace the root qdisc of eth0 with pfifo, then noqueue, then mq every 100ms, 3 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(qdiscBase+tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Timeline[1].Qdisc.Op; got != tc.op {
				t.Errorf("op %q, want %q", got, tc.op)
			}
			if got := s.Timeline[1].Action(); got != "qdisc" {
				t.Errorf("action %q, want qdisc", got)
			}
			var b strings.Builder
			explainStep(&b, s.Timeline[1], 0, "")
			if !strings.Contains(b.String(), tc.explain) {
				t.Errorf("explain %q, want it to contain %q", b.String(), tc.explain)
			}
		})
	}
}

func TestQdiscStepErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown op", "  - qdisc: {dev: vtx, netns: a, op: change, kind: pfifo}\n",
			`x.yaml:8:5: qdisc op "change": want add, replace or delete`},
		{"no kind", "  - qdisc: {dev: eth0}\n",
			"x.yaml:8:5: qdisc replace needs kind: pfifo, pfifo_fast, fq_codel, mq or noqueue (or a list of them to cycle)"},
		{"unknown kind", "  - qdisc: {dev: eth0, op: add, kind: sfq}\n",
			`x.yaml:8:5: qdisc kind "sfq": want pfifo, pfifo_fast, fq_codel, mq or noqueue`},
		{"unknown kind in a cycle", "  - {qdisc: {dev: eth0, kind: [pfifo, htb]}, every: 1s, count: 2}\n",
			`x.yaml:8:5: qdisc kind "htb": want pfifo, pfifo_fast, fq_codel, mq or noqueue`},
		{"limit without one", "  - qdisc: {dev: eth0, kind: [pfifo, mq], limit: 10}\n",
			"x.yaml:8:5: qdisc mq takes no limit: (limit: is for pfifo and fq_codel)"},
		{"negative limit", "  - qdisc: {dev: eth0, kind: pfifo, limit: -1}\n",
			"x.yaml:8:5: qdisc limit -1: want 1-4294967295 packets (none = the kernel's default)"},
		{"delete with a kind", "  - qdisc: {dev: eth0, op: delete, kind: pfifo}\n",
			"x.yaml:8:5: qdisc delete removes whatever root qdisc eth0 has: drop kind: and limit:"},
		{"mq on one queue", "  - qdisc: {dev: vtx, netns: a, kind: mq}\n",
			"x.yaml:8:5: qdisc mq needs a device with several TX queues: vtx has one (set its queues:)"},
		{"device in another netns", "  - qdisc: {dev: vtx, kind: pfifo}\n",
			`x.yaml:8:5: no device "vtx" in the root namespace (declare it under topology)`},
		{"undeclared netns", "  - qdisc: {dev: vtx, netns: b, kind: pfifo}\n",
			`x.yaml:8:5: netns "b" is not declared under topology.netns`},
		{"misspelt key", "  - qdisc: {dev: eth0, kind: pfifo, lmit: 5}\n",
			`x.yaml:8:37: unknown field "lmit" in qdisc (did you mean "limit"?)`},
		{"kind of the wrong shape", "  - qdisc: {dev: eth0, kind: {a: b}}\n",
			"x.yaml:8:30: a mapping in kind: want a string or a list, got a mapping"},
		{"two actions", "  - {qdisc: {dev: eth0, kind: pfifo}, sleep: 1s}\n",
			"x.yaml:8:5: a step needs exactly one action (write, sysctl, link, gro, channels, xdp, qdisc, napi, inject, rps, xps, irq, sched, exec, kselftest, start, stop, sleep, wait, parallel), got 2: qdisc, sleep"},
		{"sampler in an undeclared netns", "samplers:\n  - {source: \"qdisc:b\", every: 100ms}\n",
			`x.yaml:9:5: netns "b" is not declared under topology.netns`},
		{"metric in an undeclared netns", "asserts:\n  - grows: {metric: qdisc.b/vtx.requeues}\n",
			`x.yaml:9:13: netns "b" is not declared under topology.netns`},
		{"unknown counter", "asserts:\n  - grows: {metric: qdisc.eth0.stops}\n",
			`x.yaml:9:13: unknown qdisc counter "stops" in metric "qdisc.eth0.stops", want one of packets, bytes, drops, overlimits, requeues, backlog, qlen`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(qdiscBase+tc.yaml), nil)
			if err == nil {
				t.Fatal("parsed without error")
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestQdiscSources(t *testing.T) {
	yaml := qdiscBase + "samplers:\n  - {source: qdisc, every: 100ms}\n  - {source: \"qdisc:a\", every: 100ms}\n" +
		"asserts:\n  - grows: {metric: qdisc.a/vtx.packets}\n  - delta: {metric: qdisc.eth0.requeues, max: 0}\n"
	s, err := Parse("x.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range s.Metrics() {
		got = append(got, m.Source+" "+m.Field)
	}
	if want := []string{"qdisc:a vtx.packets", "qdisc eth0.requeues"}; !slices.Equal(got, want) {
		t.Errorf("metrics read %q, want %q", got, want)
	}
}
