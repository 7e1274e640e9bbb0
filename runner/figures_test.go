package runner

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

// Who polled before and after the timeline: eth0's rx-0 in softirq (some of
// it in ksoftirqd), rx-1 in its kthread, a TX NAPI named by its address, vrx
// moving to its kthread, lo's backlog polled only before, and a device the
// agent could not name.
const (
	pollsBefore = `eth0 rx-0 softirq 0 0 100 1000
vrx rx-0 softirq 1 0 5 5
lo backlog softirq 0 0 7 7
`
	pollsAfter = `eth0 rx-0 softirq 0 0 150 1500
eth0 rx-0 ksoftirqd 1 15 20 200
eth0 rx-1 kthread 1 120 30 300
eth0 tx@abc123 softirq 0 0 9 0
vrx rx-0 softirq 1 0 5 5
vrx rx-0 kthread 0 130 40 400
lo backlog softirq 0 0 7 7
? rx@1 busypoll 0 99 2 2
`
	// pollsDuring is a napi_polls sampler read: not a figure's edge.
	pollsDuring = "eth0 rx-0 softirq 0 0 99999 99999\n"
)

// pollTimeline returns a timeline holding the metrics snapshots before and
// after it (and a sampler read between them) with the given napi_polls texts.
func pollTimeline(t *testing.T, before, after string) *timeline {
	t.Helper()
	s, err := scenarios.Open("../scenarios/napi-disable-race.yaml", nil) // no polls assertions: their metrics would be figures too
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s, 1, nil, nil, nil)
	snap := func(group string, at float64, text string) sampleRec {
		return sampleRec{Group: group, Host: at, Data: wire.Sample{T: 100 + at, Values: map[string]string{wire.SourceNAPIPolls: text}}}
	}
	tl.samples = []sampleRec{snap(metricsGroup, 0, before), snap(pollsGroup, 1, pollsDuring), snap(metricsGroup, 2, after)}
	return tl
}

func TestPollFigures(t *testing.T) {
	fig := figuresOf(pollTimeline(t, pollsBefore, pollsAfter))
	for name, want := range map[string]float64{
		"napi.polls.any.any.any":          151,
		"napi.polls.any.any.softirq":      79, // ksoftirqd counts as softirq
		"napi.polls.any.any.ksoftirqd":    20,
		"napi.polls.any.any.kthread":      70,
		"napi.polls.any.any.busypoll":     2, // the unnamed device counts in the total
		"napi.packets.any.any.kthread":    700,
		"napi.polls.eth0.any.softirq":     79, // the TX NAPI counts in its device
		"napi.polls.eth0.rx-0.softirq":    70,
		"napi.packets.eth0.rx-0.softirq":  700,
		"napi.polls.eth0.rx-0.ksoftirqd":  20,
		"napi.polls.eth0.rx-1.kthread":    30,
		"napi.polls.vrx.rx-0.kthread":     40,
		"napi.packets.vrx.rx-0.any":       400,
		"napi.polls.vrx.any.kthread":      40,
		"napi.packets.eth0.any.ksoftirqd": 200,
	} {
		if got, ok := fig[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{
		"napi.polls.eth0.rx-1.softirq", // never polled there
		"napi.polls.vrx.rx-0.softirq",  // polled there before the timeline only
		"napi.polls.lo.any.any",
		"napi.polls.lo.backlog.softirq",
		"napi.polls.eth0.tx@abc123.softirq", // named by its address: differs from boot to boot
		"napi.polls.?.any.busypoll",
		"napi.polls.any.any.any/s",
	} {
		if v, ok := fig[name]; ok {
			t.Errorf("%s = %v, want no such figure", name, v)
		}
	}
	n := 0
	for name := range fig {
		if results.PollFigure(name) {
			n++
		}
	}
	// Contexts with polls: 5 any.any, 4 eth0.any, 3 eth0.rx-0, 2 eth0.rx-1, 2 vrx.any, 2 vrx.rx-0; polls and packets.
	if n != 2*18 {
		t.Errorf("%d who-polled figures, want %d", n, 2*18)
	}
}

func TestPollFiguresNoPolls(t *testing.T) {
	fig := figuresOf(pollTimeline(t, pollsBefore, pollsBefore))
	if v, ok := fig[results.PollsRecorded]; !ok || v != 0 {
		t.Errorf("%s = %v (present %v), want 0: the run recorded who polled", results.PollsRecorded, v, ok)
	}
	for name := range fig {
		if results.PollFigure(name) && !strings.Contains(name, ".any.any.any") {
			t.Errorf("figure %s without polls", name)
		}
	}
	bad := figuresOf(pollTimeline(t, pollsBefore, "eth0 rx-0 softirq\n"))
	for name := range bad {
		if results.PollFigure(name) {
			t.Errorf("figure %s from an unreadable snapshot", name)
		}
	}
}

func TestSamplesFillPollFigures(t *testing.T) {
	runs := map[string][]*results.Result{
		"a": {{Figures: map[string]float64{results.PollsRecorded: 10, "napi.polls.eth0.any.ksoftirqd": 4, "softirqs.NET_RX": 1}}},
		"b": {
			{Figures: map[string]float64{results.PollsRecorded: 12}},
			{Figures: map[string]float64{"softirqs.NET_RX": 3}}, // who polled not recorded
		},
	}
	got := map[string]float64{}
	for _, s := range Samples(runs) {
		if s.Metric == "napi.polls.eth0.any.ksoftirqd" {
			got[fmt.Sprintf("%s-%d", s.Kernel, s.Run)] = s.Value
		}
	}
	if want := map[string]float64{"a-1": 4, "b-1": 0}; !maps.Equal(got, want) {
		t.Errorf("ksoftirqd samples %v, want %v (b-2 did not record who polled)", got, want)
	}
}

func figuresOf(tl *timeline) map[string]float64 { return tl.figures(tl.record(), 2) }

// TestDatagrams: per datagram divides by what the root namespace delivered,
// or, when it delivered none (a flood forwarded to a sink in another
// namespace), by what the udp sinks received.
func TestDatagrams(t *testing.T) {
	loads := []results.Load{{Name: "fwd", Kind: "udp", Received: 900}, {Name: "rr", Kind: "rr", Received: 50}}
	if got := datagrams(map[string]float64{"snmp.Udp.InDatagrams": 1000}, loads); got != 1000 {
		t.Errorf("root delivered 1000: got %v", got)
	}
	if got := datagrams(map[string]float64{"snmp.Udp.InDatagrams": 0}, loads); got != 900 {
		t.Errorf("root delivered none: got %v, want the udp sinks' 900", got)
	}
	if got := datagrams(map[string]float64{}, nil); got != 0 {
		t.Errorf("nothing: got %v", got)
	}
}
