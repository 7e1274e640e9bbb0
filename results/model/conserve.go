package model

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
)

// Conservation: what a namespace's udp loads sent is received by their
// sinks or counted as dropped by the kernel on the way; nothing vanishes.
// Judged per sink namespace (the stack's counters are per namespace), over
// the counters read before and after the timeline, where no change that may
// free queued packets uncounted (a link, GRO, XDP or channels change, an
// exec or kselftest step) ran on the way while the loads sent.

// Totals are the counters a run read before and after its timeline: the
// metrics snapshots' sources, by key (nil: not read). After is the last
// read after the timeline (the final metrics snapshot, or the last of the
// settle reads that follow it) and Prev the one before it: the end state
// is the kernel's only where nothing arrived between the two (Settled).
type Totals struct{ Before, Prev, After map[string]string }

// TotalsOf returns the first metrics snapshot of samples and the last two
// reads after the timeline.
func TotalsOf(samples []results.SampleLine) Totals {
	var t Totals
	for _, s := range samples {
		switch {
		case s.Group == results.MetricsGroup && t.Before == nil:
			t.Before = s.Sample.Values
		case s.Group == results.MetricsGroup || s.Group == results.SettleGroup:
			t.Prev, t.After = t.After, s.Sample.Values
		}
	}
	return t
}

// arrivals are the sink namespace's counters that rise with every packet
// the stack takes in, delivered or dropped.
var arrivals = []string{"Ip.InReceives", "Udp.InDatagrams", "Udp.NoPorts", "Udp.InErrors"}

// Settled says that between reads prev and cur no packet arrived in the
// namespaces loads end in: what their senders sent is all accounted for.
func Settled(prev, cur map[string]string, loads []results.Load) bool {
	for _, l := range loads {
		src := SNMPSource(l.Netns)
		a, err1 := parseCounters(wire.SourceSNMP, prev[src])
		b, err2 := parseCounters(wire.SourceSNMP, cur[src])
		if err1 != nil || err2 != nil {
			return false
		}
		for _, c := range arrivals {
			if a[c] != b[c] {
				return false
			}
		}
	}
	return true
}

// The sources conservation reads besides softnet_stat, by namespace ("":
// the root): the agent's keys (internal/wire) for them.
func SNMPSource(ns string) string   { return nsSource(ns, wire.SourceSNMP, "/proc/net/snmp") }
func NetdevSource(ns string) string { return nsSource(ns, wire.SourceNetdev, "/proc/net/dev") }

func QdiscSource(ns string) string {
	if ns == "" {
		return wire.SourceQdisc
	}
	return wire.PrefixQdisc + ns
}

// EthtoolSource is a device's ethtool -S counters.
func EthtoolSource(ns, dev string) string { return "ethtool:" + ns + ":" + dev }

// ArpSource is the ARP table's statistics: one table for every namespace,
// whose unresolved_discards count what waited for a neighbour and was dropped.
const ArpSource = "file:/proc/net/stat/arp_cache"

// HostTapsSource is what the runner adds to a metrics snapshot when the
// host sends: "<tap> tx_dropped N qdisc_drops M" lines (a full tun ring,
// the tap's qdisc).
const HostTapsSource = "host_taps"

func nsSource(ns, root, path string) string {
	if ns == "" {
		return root
	}
	return "nsfile:" + ns + ":" + path
}

// Sources lists what conservation needs read before and after the
// timeline for loads (the scenario's udp loads: sink namespace and device,
// sender namespace or host).
func Sources(loads []results.Load) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, l := range loads {
		add(SNMPSource(l.Netns))
		add(NetdevSource(l.Netns))
		if l.Dev != "" && l.Dev != "lo" {
			add(EthtoolSource(l.Netns, l.Dev))
		}
		if !l.FromHost {
			add(NetdevSource(l.FromNetns))
			add(QdiscSource(l.FromNetns))
		}
		add(wire.SourceSoftnet)
		add(ArpSource)
	}
	return out
}

// stackDrops are the sink namespace's /proc/net/snmp counters of datagrams
// the stack dropped: Udp InErrors holds RcvbufErrors and InCsumErrors.
var stackDrops = []string{"Udp.NoPorts", "Udp.InErrors", "Ip.InDiscards", "Ip.InHdrErrors", "Ip.InAddrErrors", "Ip.InUnknownProtos"}

// Tally is one sink namespace's account.
type Tally struct {
	Netns          string
	Loads          []string
	Sent, Received uint64
	Dropped        map[string]uint64 // counter -> its rise, the non-zero ones
	Missing        []string          // sources not read: their drops are unknown
}

// Vanished is what neither a sink received nor a counter counted.
func (t Tally) Vanished() int64 {
	v := int64(t.Sent) - int64(t.Received)
	for _, n := range t.Dropped {
		v -= int64(n)
	}
	return v
}

// checkConserve judges the rule with conserve on every namespace a udp
// load ends in.
func checkConserve(r *Rule, knobs []results.Knob, loads []results.Load, tot Totals) Outcome {
	o := Outcome{Rule: r}
	if tot.Before == nil || tot.After == nil {
		return o
	}
	groups := map[string][]results.Load{}
	for _, l := range loads {
		if l.Kind == "udp" {
			groups[l.Netns] = append(groups[l.Netns], l)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(groups)) {
		ls := groups[ns]
		if k := changedOnWay(knobs, ls); k != nil {
			o.Unsure++
			continue
		}
		if slices.ContainsFunc(ls, func(l results.Load) bool { return l.Routed }) {
			o.Unsure++ // the forwarding namespace's drops are not read
			continue
		}
		if slices.ContainsFunc(ls, func(l results.Load) bool { return l.Undrained }) {
			o.Unsure++ // a sink closed a socket that still held datagrams
			continue
		}
		if tot.Prev == nil || !Settled(tot.Prev, tot.After, ls) {
			o.Unsure++ // packets still arrived at the end: some were on their way
			continue
		}
		t, err := tally(ns, ls, tot)
		if err != nil {
			o.Unsure++
			continue
		}
		v := t.Vanished()
		if v > r.Slack && len(t.Missing) > 0 {
			o.Unsure++ // what vanished may be in a counter not read
			continue
		}
		o.Judged++
		o.NAPIs++ // namespaces, for this rule
		o.Tallies = append(o.Tallies, t)
		if v > r.Slack {
			o.Broken = append(o.Broken, Window{NAPI: NAPI{Dev: ns}, Tally: &t, After: -1})
		}
	}
	return o
}

// wayKnob says a change may free packets queued on the way without
// counting them: a veth going down, or losing its last GRO/XDP user,
// frees its ring (veth_napi_del's ptr_ring_cleanup); channels, XDP and
// exec or kselftest steps may do either. A virtio-net NIC's link does
// not: virtnet_close disables the NAPIs and keeps the RX buffers, which
// it polls again at the next open, and what the full ring cannot take
// waits in the tap, whose drops are counted (measured: 0 and 1 more
// counted than lost over three runs with eth0 bouncing under a flood).
//
// A NIC left down for the rest of the run never polls those buffers
// again: what they hold is neither received nor counted (lab explore found
// it on stock-7.3), so its link going down counts when no link up follows.
func wayKnob(knobs []results.Knob, i int) bool {
	k := knobs[i]
	if !liveKnob(k.Kind) {
		return false
	}
	if k.Kind != results.KnobLink || !k.NIC {
		return true
	}
	if k.Value != "down" {
		return false
	}
	for _, later := range knobs[i+1:] {
		if later.Kind == results.KnobLink && later.Dev == k.Dev && later.Netns == k.Netns && later.Value == "up" && !later.Failed {
			return false
		}
	}
	return true
}

// changedOnWay returns a change on the loads' namespaces (sink and
// senders') made while one of them sent, or nil.
func changedOnWay(knobs []results.Knob, ls []results.Load) *results.Knob {
	nss := map[string]bool{}
	for _, l := range ls {
		nss[l.Netns] = true
		if !l.FromHost {
			nss[l.FromNetns] = true
		}
	}
	for i, k := range knobs {
		if !wayKnob(knobs, i) || !(nss[k.Netns] || k.Dev == "*") {
			continue
		}
		for _, l := range ls {
			from, to := 0.0, 1e18 // no buckets: the whole run
			if len(l.Sending) > 0 {
				// What was sent may still be on its way for the 200 ms
				// the sink outlives the sender, and its drain.
				from, to = l.SendingFrom, l.SendingFrom+0.1*float64(len(l.Sending))+0.5
			}
			if k.Start < to && k.Done > from {
				return &knobs[i]
			}
		}
	}
	return nil
}

// tally counts ns's loads and the drops the counters saw on their way.
func tally(ns string, ls []results.Load, tot Totals) (Tally, error) {
	t := Tally{Netns: ns, Dropped: map[string]uint64{}}
	senders := map[string]bool{}
	host, devs := false, map[string]bool{}
	for _, l := range ls {
		t.Loads = append(t.Loads, l.Name)
		t.Sent += l.Sent
		t.Received += l.Received
		if l.FromHost {
			host = true
		} else {
			senders[l.FromNetns] = true
		}
		if l.Dev != "" && l.Dev != "lo" {
			devs[l.Dev] = true
		}
	}
	// Required: the sink namespace's stack and devices, the senders'
	// devices, the backlogs.
	snmp, err := rise(tot, SNMPSource(ns), wire.SourceSNMP)
	if err != nil {
		return t, err
	}
	for _, c := range stackDrops {
		t.add(c, snmp[c])
	}
	nd, err := rise(tot, NetdevSource(ns), wire.SourceNetdev)
	if err != nil {
		return t, err
	}
	var rxDrops uint64
	for k, v := range nd {
		if strings.HasSuffix(k, ".rx_drop") || strings.HasSuffix(k, ".rx_errs") {
			t.add(k, v)
		}
		if strings.HasSuffix(k, ".rx_drop") {
			rxDrops += v
		}
	}
	// optional is a source whose drops count when it was read; one not
	// read is Missing (and gives no counters).
	optional := func(src, kind string) map[string]uint64 {
		r, err := rise(tot, src, kind)
		if err != nil {
			t.Missing = append(t.Missing, src)
		}
		return r
	}
	for _, s := range slices.Sorted(maps.Keys(senders)) {
		nd, err := rise(tot, NetdevSource(s), wire.SourceNetdev)
		if err != nil {
			return t, err
		}
		for k, v := range nd {
			if strings.HasSuffix(k, ".tx_drop") || strings.HasSuffix(k, ".tx_errs") {
				t.add(nsLabel(s)+k, v)
			}
		}
		for k, v := range optional(QdiscSource(s), wire.SourceQdisc) {
			if strings.HasSuffix(k, ".drops") {
				t.add("qdisc "+nsLabel(s)+k, v)
			}
		}
	}
	sn, err := rise(tot, wire.SourceSoftnet, wire.SourceSoftnet)
	if err != nil {
		return t, err
	}
	// A full backlog counts its drop twice: in softnet_stat and in the
	// rx_dropped of skb->dev (enqueue_to_backlog, dev.c:4842-4845 [5081-5083]),
	// a device of the sink's namespace on the loads' way. Only the
	// backlog drops beyond the devices' count are others.
	if d := sn["dropped"]; d > rxDrops {
		t.add("softnet dropped", d-rxDrops)
	}
	for _, d := range slices.Sorted(maps.Keys(devs)) {
		for k, v := range optional(EthtoolSource(ns, d), "ethtool") {
			if strings.Contains(k, "drop") {
				t.add(d+" "+k, v)
			}
		}
	}
	t.add("arp unresolved_discards", optional(ArpSource, "arp")["unresolved_discards"])
	if host {
		for k, v := range optional(HostTapsSource, HostTapsSource) {
			t.add("host "+k, v)
		}
	}
	return t, nil
}

func (t *Tally) add(name string, n uint64) {
	if n > 0 {
		t.Dropped[name] += n
	}
}

func nsLabel(ns string) string {
	if ns == "" {
		return ""
	}
	return ns + "/"
}

// rise parses source key's text before and after as kind and returns each
// field's rise (summed over CPUs); a field that fell (a device made anew)
// is an error: its drops are unknown.
func rise(tot Totals, key, kind string) (map[string]uint64, error) {
	b, ok1 := tot.Before[key]
	a, ok2 := tot.After[key]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s not read before and after the timeline", key)
	}
	sb, err := parseCounters(kind, b)
	if err != nil {
		return nil, fmt.Errorf("%s before the timeline: %w", key, err)
	}
	sa, err := parseCounters(kind, a)
	if err != nil {
		return nil, fmt.Errorf("%s after the timeline: %w", key, err)
	}
	out := map[string]uint64{}
	for k, va := range sa {
		vb := sb[k] // a device or qdisc made during the run starts from 0
		if va < vb {
			return nil, fmt.Errorf("%s: %s fell from %d to %d", key, k, vb, va)
		}
		out[k] = va - vb
	}
	return out, nil
}

// parseCounters reads a source's text as field -> value (summed over CPUs).
func parseCounters(kind, text string) (map[string]uint64, error) {
	out := map[string]uint64{}
	switch kind {
	case "ethtool":
		for _, l := range strings.Split(text, "\n") {
			f := strings.Fields(l)
			if len(f) != 2 {
				continue
			}
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad ethtool line %q", l)
			}
			out[f[0]] = v
		}
		return out, nil
	case "arp":
		return parseStatTable(text)
	case HostTapsSource:
		for _, l := range strings.Split(text, "\n") {
			f := strings.Fields(l)
			for i := 1; i+1 < len(f); i += 2 {
				v, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("bad host tap line %q", l)
				}
				out[f[0]+" "+f[i]] = v
			}
		}
		return out, nil
	}
	s, err := metrics.ParseSource(kind, text)
	if err != nil {
		return nil, err
	}
	for k := range s {
		v, _ := s.Value(k, -1)
		out[k] = uint64(v)
	}
	return out, nil
}

// parseStatTable reads a /proc/net/stat table: a header of names, then a
// row of hex values per CPU, summed.
func parseStatTable(text string) (map[string]uint64, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("a stat table wants a header and a row per CPU, got %d lines", len(lines))
	}
	names := strings.Fields(lines[0])
	out := map[string]uint64{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(names) {
			return nil, fmt.Errorf("bad stat row %q: %d columns, the header has %d", l, len(f), len(names))
		}
		for i, s := range f {
			v, err := strconv.ParseUint(s, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("bad stat row %q: %w", l, err)
			}
			out[names[i]] += v
		}
	}
	return out, nil
}

// maxVanished is the most any judged namespace lost uncounted.
func (o Outcome) maxVanished() int64 {
	m := int64(math.MinInt64)
	for _, t := range o.Tallies {
		m = max(m, t.Vanished())
	}
	return m
}

// describe says what a broken namespace's account saw: "netns b
// (loads flood): 1200 sent, 1100 received, 90 counted as dropped
// (Udp.InErrors 60, softnet dropped 30), 10 vanished".
func (t Tally) Describe() string {
	where := "the root namespace"
	if t.Netns != "" {
		where = "netns " + t.Netns
	}
	var drops uint64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.Dropped)) {
		drops += t.Dropped[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, t.Dropped[k]))
	}
	s := fmt.Sprintf("%s (loads %s): %d sent, %d received, %d counted as dropped", where, strings.Join(t.Loads, ", "),
		t.Sent, t.Received, drops)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s + fmt.Sprintf(", %d vanished", t.Vanished())
}
