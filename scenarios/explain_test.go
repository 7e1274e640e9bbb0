package scenarios

import (
	"strings"
	"testing"
)

// explainBase declares a threaded-toggled veth with static neighbours and a
// NIC with a feature off, two named steps (a repeated write and a link
// change) and two probes; each case adds asserts or steps after it.
const explainBase = `name: t
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24, features: {rx-gro-hw: false}}]
  netns: [a]
  veths:
    - {name: vrx, address: 10.1.0.1/24, gro: true, static_neigh: true,
       peer: {name: vtx, netns: a, address: 10.1.0.2/24, features: {tx-tcp-segmentation: false, tx-checksumming: true}}}
inject:
  - {at: napi_enable+0x1c, delay: 200us}
  - {name: slow-disable, at: napi_disable, when: return, delay: 1ms, probability: 0.25, count: 50, armed: false}
timeline:
  - name: flip vrx
    write: {path: /sys/class/net/vrx/threaded, values: ["1", "0"]}
    every: 500ms
    count: 4
  - name: bounce
    link: {dev: eth0, state: toggle}
    every: 100ms
    count: 4
`

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // lines (or parts of them) the plan must hold
	}{
		{"topology", "", []string{
			"nic eth0: virtio-net, 2 queue pairs, 10.0.0.2/24, host side 10.0.0.1/24, mac 52:54:00:12:34:56, ethtool -K rx-gro-hw off\n",
			"veth vrx (netns root, 10.1.0.1/24, GRO on) <-> vtx (netns a, 10.1.0.2/24, ethtool -K tx-checksumming on tx-tcp-segmentation off), permanent neighbour entries for each other\n",
		}},
		{"probes", "", []string{
			"inject (BPF kprobes that busy-wait in the guest; the code under test is unchanged):\n",
			"  napi_enable+0x1c: spin 200µs at napi_enable+0x1c, probability 1, no limit, armed from the start (line 9)\n",
			"  slow-disable: spin 1ms on return from napi_disable, probability 0.25, at most 50 times, disarmed until an inject step arms it (line 10)\n",
		}},
		{"inject steps", `  - inject: {name: slow-disable, armed: true}
  - inject: {name: slow-disable, armed: false}
  - {inject: {name: napi_enable+0x1c}, every: 1s, count: 2}
`, []string{
			"arm inject probe slow-disable (line 20)",
			"disarm inject probe slow-disable (line 21)",
			"disarm, then arm inject probe napi_enable+0x1c every 1s, 2 times (line 22)",
		}},
		{"polls after each repetition, context by value", `asserts:
  - each: flip vrx
    within: 400ms
    polls: {napi: vrx/rx-0, context: {"1": kthread, "0": softirq}, min: 1}
`, []string{`  - polls of vrx/rx-0 in the 400ms after each repetition of "flip vrx": >= 1 every time, in softirq after it set "0" and in kthread after it set "1"` + "\n"}},
		{"polls after each repetition, one context", `asserts:
  - name: kthread polls
    each: flip vrx
    within: 400ms
    polls: {dev: eth0, context: kthread, cpu: 1, max: 0}
`, []string{`  - kthread polls: polls of every NAPI of eth0 on cpu 1 in kthread, in the 400ms after each repetition of "flip vrx": <= 0 every time` + "\n"}},
		{"packets over the timeline", `asserts:
  - polls: {napi: vrx/rx-0, context: any, packets: true, min: 1000}
`, []string{"  - packets polled from vrx/rx-0 in any context, over the timeline: >= 1000\n"}},
		{"windows", `asserts:
  - during: {step: bounce}
    grows: {metric: softirqs.NET_RX, min: 10}
  - during: {after: bounce, for: 1s, skip: 200ms}
    polls: {dev: eth0, context: softirq, max: 0}
  - during: {from: flip vrx, to: bounce}
    rate: {metric: netdev.vrx.rx_packets, min: 500}
  - during: {step: flip vrx}
    delta: {metric: softnet.dropped, max: 0}
  - each: bounce
    within: 50ms
    ratio: {num: softirqs.NET_RX, den: snmp.Udp.InDatagrams, max: 2}
`, []string{
			`  - softirqs.NET_RX grows by >= 10 while "bounce" runs` + "\n",
			`  - polls of every NAPI of eth0 in softirq, in the 1s after "bounce" ends (skipping its first 200ms): <= 0` + "\n",
			`  - netdev.vrx.rx_packets per second from the start of "flip vrx" to the end of "bounce": >= 500` + "\n",
			`  - change of softnet.dropped while "flip vrx" runs: <= 0` + "\n",
			`  - change of softirqs.NET_RX / change of snmp.Udp.InDatagrams in the 50ms after each repetition of "bounce": <= 2 every time` + "\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(explainBase+tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			s.Explain(&b)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("plan lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), "?") {
				t.Errorf("plan has an unexplained step or assertion:\n%s", b.String())
			}
		})
	}
}

// TestExplainShipped checks that every shipped scenario explains every step
// and assertion.
func TestExplainShipped(t *testing.T) {
	for _, f := range shippedFiles() {
		s, err := Open(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		s.Explain(&b)
		if strings.Contains(b.String(), "- ?") || strings.Contains(b.String(), " ? (line") {
			t.Errorf("%s: unexplained lines:\n%s", f, b.String())
		}
	}
	s, _ := Open("threaded-toggle-under-load.yaml", nil)
	var b strings.Builder
	s.Explain(&b)
	for _, w := range []string{
		`polls of vrx/rx-0 in the 500ms after each repetition of "flip vrx": >= 1 every time, in softirq after it set "0" and in kthread after it set "1"`,
		"permanent neighbour entries for each other",
		"  - threaded-not-softirq: no softirq, ksoftirqd poll of a NAPI in threaded mode",
		"judged after the changes of: vrx threaded (line 61), eth0 threaded (line 64), vrx threaded (line 70)",
		"  rx-live on: eth0 (load nic-udp), vrx (load veth-udp)",
		"  udp-conserved on the namespaces the udp loads nic-udp, veth-udp end in",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("threaded-toggle-under-load plan lacks %q", w)
		}
	}
}

// TestExplainInvariantsOff shows a rule turned off with its reason, and
// says when no step gives the invariants anything to judge.
func TestExplainInvariantsOff(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\ntimeline:\n  - sleep: 1s\ninvariants:\n  off: {down-not-polled: the link is never down}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Explain(&b)
	for _, w := range []string{"  - down-not-polled: off (the link is never down)", "the mode rules judge nothing"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("plan lacks %q:\n%s", w, b.String())
		}
	}
}
