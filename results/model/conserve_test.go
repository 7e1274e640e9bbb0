package model

import (
	"fmt"
	"strings"
	"testing"

	"napilab/results"
)

// counts is one read of every counter conservation reads for a load from
// netns a to vrx in netns b: the named ones are set, the rest 0.
type counts map[string]uint64

func (c counts) sources(withEthtool, withArp bool) map[string]string {
	snmp := func() string {
		ip := []string{"Forwarding", "InReceives", "InHdrErrors", "InAddrErrors", "InUnknownProtos", "InDiscards"}
		udp := []string{"InDatagrams", "NoPorts", "InErrors", "RcvbufErrors"}
		row := func(g string, names []string) string {
			vals := make([]string, len(names))
			for i, n := range names {
				vals[i] = fmt.Sprint(c[g+"."+n])
			}
			return g + ": " + strings.Join(names, " ") + "\n" + g + ": " + strings.Join(vals, " ") + "\n"
		}
		return row("Ip", ip) + row("Udp", udp)
	}
	netdev := func(devs ...string) string {
		s := "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n"
		for _, d := range devs {
			s += fmt.Sprintf("%s: 0 0 0 %d 0 0 0 0 0 0 0 %d 0 0 0 0\n", d, c[d+".rx_drop"], c[d+".tx_drop"])
		}
		return s
	}
	softnet := fmt.Sprintf("00000010 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"+
		"00000010 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n",
		c["dropped0"], c["dropped1"])
	out := map[string]string{
		SNMPSource("b"):   snmp(),
		NetdevSource("b"): netdev("lo", "vrx"),
		NetdevSource("a"): netdev("lo", "vtx"),
		QdiscSource("a"):  fmt.Sprintf("vtx root 0: noqueue packets 0 bytes 0 drops %d overlimits 0 requeues 0 backlog 0 qlen 0", c["qdisc"]),
		"softnet_stat":    softnet,
		HostTapsSource:    fmt.Sprintf("tap0 tx_dropped %d qdisc_drops 0", c["tap"]),
	}
	if withEthtool {
		out[EthtoolSource("b", "vrx")] = fmt.Sprintf("peer_ifindex 7\nrx_queue_0_drops %d\nrx_queue_0_xdp_packets 0", c["ethtool"])
	}
	if withArp {
		out[ArpSource] = fmt.Sprintf("entries  allocs unresolved_discards\n00000002 00000001 %08x\n00000002 00000000 00000000\n", c["arp"])
	}
	return out
}

func totals(before, after counts) Totals {
	return Totals{Before: before.sources(true, true), Prev: after.sources(true, true), After: after.sources(true, true)}
}

// flood is a udp load from netns a to vrx in netns b, sending 1.0-3.0 s.
func flood(sent, received uint64) results.Load {
	l := results.Load{Name: "flood", Kind: "udp", Dev: "vrx", Netns: "b", FromNetns: "a", Sent: sent, Received: received,
		SendingFrom: 1}
	l.Sending = make([]uint64, 20)
	return l
}

func conserved(t *testing.T, knobs []results.Knob, loads []results.Load, tot Totals) Outcome {
	t.Helper()
	return outcome(t, Check(Record{Knobs: knobs, Loads: loads, Totals: tot}, []*Rule{RuleNamed("udp-conserved")}), "udp-conserved")
}

func TestUDPConserved(t *testing.T) {
	zero := counts{}
	gro := func(start float64) results.Knob {
		return results.Knob{Step: "gro", Line: 7, Start: start, Done: start + 0.05, Netns: "b", Dev: "vrx", Kind: results.KnobNAPIs, Value: "off"}
	}
	for _, tc := range []struct {
		name          string
		loads         []results.Load
		knobs         []results.Knob
		after         counts
		judged        int
		vanished      int64 // the judged namespace's
		broken        bool
		detail        string
		before        counts
		noEthtool     bool
		unsure        int
		notExercised  bool
		hostSentFlood bool
		arriving      bool // Ip.InReceives rose between the last two reads
	}{
		{name: "every datagram received", loads: []results.Load{flood(1000, 1000)}, judged: 1},
		{name: "the losses counted where they happened (a backlog's drops once)", loads: []results.Load{flood(1000, 910)},
			after: counts{"Udp.InErrors": 40, "Udp.NoPorts": 5, "vrx.rx_drop": 10, "vtx.tx_drop": 20, "qdisc": 5,
				"dropped0": 7, "dropped1": 3, "ethtool": 4, "arp": 6},
			judged: 1},
		{name: "backlog drops beyond the devices' count", loads: []results.Load{flood(1000, 970)},
			after: counts{"vrx.rx_drop": 10, "dropped0": 25, "dropped1": 5}, judged: 1},
		{name: "more counted than lost (another flow's drops)", loads: []results.Load{flood(1000, 990)},
			after: counts{"Udp.InErrors": 30}, judged: 1, vanished: -20},
		{name: "datagrams vanished", loads: []results.Load{flood(1000, 980)}, after: counts{"Udp.InErrors": 12},
			judged: 1, vanished: 8, broken: true,
			detail: "netns b (loads flood): 1000 sent, 980 received, 12 counted as dropped (Udp.InErrors 12), 8 vanished"},
		{name: "a GRO change while it sent frees the ring uncounted", loads: []results.Load{flood(1000, 700)},
			knobs: []results.Knob{gro(2.0)}, unsure: 1},
		{name: "a GRO change before it sent", loads: []results.Load{flood(1000, 700)},
			knobs: []results.Knob{gro(0.5)}, judged: 1, vanished: 300, broken: true},
		{name: "a GRO change in another namespace", loads: []results.Load{flood(1000, 1000)},
			knobs: []results.Knob{{Step: "gro", Start: 2, Done: 2.1, Netns: "c", Dev: "v9", Kind: results.KnobNAPIs}}, judged: 1},
		{name: "a NIC's link bounced while it sent (its ring keeps what it holds)", loads: []results.Load{flood(1000, 1000)},
			knobs: []results.Knob{{Step: "bounce", Start: 2, Done: 2.1, Netns: "b", Dev: "eth0", Kind: results.KnobLink, Value: "down", NIC: true},
				{Step: "bounce", Start: 2.2, Done: 2.3, Netns: "b", Dev: "eth0", Kind: results.KnobLink, Value: "up", NIC: true}},
			judged: 1},
		{name: "a NIC left down while it sent (its ring is never polled again)", loads: []results.Load{flood(1000, 700)},
			knobs:  []results.Knob{{Step: "down", Start: 2, Done: 2.1, Netns: "b", Dev: "eth0", Kind: results.KnobLink, Value: "down", NIC: true}},
			unsure: 1},
		{name: "a veth's link bounced while it sent", loads: []results.Load{flood(1000, 1000)},
			knobs:  []results.Knob{{Step: "bounce", Start: 2, Done: 2.1, Netns: "b", Dev: "vrx", Kind: results.KnobLink, Value: "down"}},
			unsure: 1},
		{name: "an exec step anywhere while it sent", loads: []results.Load{flood(1000, 1000)},
			knobs: []results.Knob{{Step: "sh", Start: 2, Done: 2.5, Dev: "*", Kind: results.KnobUnknown}}, unsure: 1},
		{name: "a loss where a driver counter was not read", loads: []results.Load{flood(1000, 990)}, noEthtool: true, unsure: 1},
		{name: "no loss, a driver counter not read", loads: []results.Load{flood(1000, 1000)}, noEthtool: true, judged: 1},
		{name: "a counter fell (a device made anew)", loads: []results.Load{flood(1000, 1000)},
			before: counts{"vrx.rx_drop": 9}, unsure: 1},
		{name: "a sink that closed its socket before it was empty", loads: []results.Load{func() results.Load {
			l := flood(1000, 700)
			l.Undrained = true
			return l
		}()}, unsure: 1},
		{name: "a load routed through a forwarding namespace (its drops are not read)", loads: []results.Load{func() results.Load {
			l := flood(1000, 700)
			l.Routed = true
			return l
		}()}, unsure: 1},
		{name: "packets still arriving at the end", loads: []results.Load{flood(1000, 990)}, arriving: true, unsure: 1},
		{name: "not a udp load", loads: []results.Load{{Name: "rr", Kind: "rr", Netns: "b", Sent: 10}}, notExercised: true},
		{name: "a load whose sink's count was lost", loads: []results.Load{{Name: "flood", Netns: "b", Sent: 10}}, notExercised: true},
		{name: "the host's tap dropped what it could not queue", hostSentFlood: true,
			after: counts{"tap": 30}, judged: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.before
			if before == nil {
				before = zero
			}
			tot := totals(before, tc.after)
			if tc.arriving {
				tot.Prev = counts{}.sources(true, true)
				tot.After = counts{"Ip.InReceives": 10}.sources(true, true)
			}
			if tc.noEthtool {
				delete(tot.Before, EthtoolSource("b", "vrx"))
			}
			loads := tc.loads
			if tc.hostSentFlood {
				l := flood(1000, 970)
				l.FromHost, l.FromNetns = true, ""
				loads = []results.Load{l}
			}
			outs := Check(Record{Knobs: tc.knobs, Loads: loads, Totals: tot}, []*Rule{RuleNamed("udp-conserved")})
			if tc.notExercised {
				if len(outs) != 0 {
					t.Fatalf("judged %+v, want no outcome", outs)
				}
				return
			}
			o := conserved(t, tc.knobs, loads, tot)
			if o.Judged != tc.judged || o.Unsure != tc.unsure {
				t.Fatalf("judged %d, unsure %d; want %d, %d", o.Judged, o.Unsure, tc.judged, tc.unsure)
			}
			if tc.judged > 0 && o.Tallies[0].Vanished() != tc.vanished {
				t.Errorf("vanished %d, want %d", o.Tallies[0].Vanished(), tc.vanished)
			}
			a := o.Assert()
			if a.Passed == tc.broken {
				t.Errorf("passed %v, want %v: %s", a.Passed, !tc.broken, a.Measured)
			}
			if tc.detail != "" && a.Detail != tc.detail {
				t.Errorf("detail\n got %s\nwant %s", a.Detail, tc.detail)
			}
			if a.Unmeasured != (tc.judged == 0) {
				t.Errorf("unmeasured %v with %d judged: %s", a.Unmeasured, tc.judged, a.Measured)
			}
		})
	}
}

// TotalsOf takes the first metrics snapshot and the last two reads after
// the timeline, settle reads included.
func TestTotalsOf(t *testing.T) {
	read := func(group, v string) results.SampleLine {
		return results.SampleLine{Group: group, Sample: results.SampleSnapshot{Values: map[string]string{"k": v}}}
	}
	got := TotalsOf([]results.SampleLine{read("metrics", "before"), read("napi_polls", "x"), read("metrics", "final"),
		read("settle", "s1"), read("settle", "s2")})
	if got.Before["k"] != "before" || got.Prev["k"] != "s1" || got.After["k"] != "s2" {
		t.Errorf("totals %+v", got)
	}
	got = TotalsOf([]results.SampleLine{read("metrics", "before"), read("metrics", "final")})
	if got.Prev != nil || got.After["k"] != "final" {
		t.Errorf("without settle reads: %+v", got)
	}
}

// Without both metrics snapshots (a run cut short) nothing is judged.
func TestUDPConservedNeedsBothReads(t *testing.T) {
	tot := totals(counts{}, counts{})
	tot.After = nil
	if outs := Check(Record{Loads: []results.Load{flood(10, 0)}, Totals: tot}, []*Rule{RuleNamed("udp-conserved")}); len(outs) != 0 {
		t.Errorf("judged %+v without the read after the timeline", outs)
	}
}

// The sources a run reads for conservation: the sink's stack and devices,
// the sender's devices and qdiscs, the backlogs, the ARP table.
func TestConserveSources(t *testing.T) {
	got := Sources([]results.Load{flood(0, 0), {Name: "lo", Kind: "udp", Dev: "lo", Netns: "a", FromNetns: "a"},
		{Name: "nic", Kind: "udp", Dev: "eth0", FromHost: true}})
	want := []string{"nsfile:b:/proc/net/snmp", "nsfile:b:/proc/net/dev", "ethtool:b:vrx", "nsfile:a:/proc/net/dev",
		"qdisc:a", "softnet_stat", ArpSource, "nsfile:a:/proc/net/snmp", "snmp", "netdev", "ethtool::eth0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("sources\n got %v\nwant %v", got, want)
	}
}
