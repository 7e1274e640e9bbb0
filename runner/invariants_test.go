package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/model"
	"napilab/scenarios"
)

// knobTimeline is busy-poll-threaded with its flips recorded: threaded=1 at
// 1.0s, a failed threaded=0 at 2.0s, the link down at 3.0s; softirqUntil
// is when softirq stops polling eth0/rx-0 (the kthread polls from 1.0s).
func knobTimeline(t *testing.T, softirqUntil float64) *timeline {
	t.Helper()
	s, err := scenarios.Open("../scenarios/busy-poll-threaded.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s, 1, nil, nil, nil)
	var write, link *scenarios.Step
	var walk func([]*scenarios.Step)
	walk = func(steps []*scenarios.Step) {
		for _, st := range steps {
			switch {
			case st.Write != nil && write == nil:
				write = st
			case st.Link != nil && link == nil:
				link = st
			}
			walk(st.Parallel)
		}
	}
	walk(s.Timeline)
	tl.iters[write] = []iteration{{start: 1, done: 1.02, value: "1"}, {start: 2, done: 2.02, value: "0", failed: true}}
	tl.iters[link] = []iteration{{start: 3, done: 3.05, value: "down"}}
	for at := 0.0; at < 4; at += 0.2 {
		soft, kth := 0, 0
		for x := 0.0; x < at; x += 0.01 {
			if x < softirqUntil {
				soft++
			}
			if x >= 1 && x < 3 {
				kth++
			}
		}
		text := fmt.Sprintf("eth0 rx-0 softirq 0 0 %d %d\neth0 rx-0 kthread 1 77 %d %d\n", soft, soft, kth, kth)
		tl.samples = append(tl.samples, sampleRec{Group: pollsGroup, Sent: at, Host: at + 0.01,
			Data: wire.Sample{T: 50 + at, Took: 0.005, Values: map[string]string{wire.SourceNAPIPolls: text}}})
	}
	return tl
}

func TestKnobsFromIterations(t *testing.T) {
	knobs := knobTimeline(t, 1).knobs()
	if len(knobs) != 3 {
		t.Fatalf("knobs %+v", knobs)
	}
	k := knobs[0]
	if k.Kind != results.KnobThreaded || k.Dev != "eth0" || k.Value != "1" || k.Start != 1 || k.Done != 1.02 || k.Failed || k.Line == 0 {
		t.Errorf("first knob %+v", k)
	}
	if !knobs[1].Failed || knobs[2].Kind != results.KnobLink || knobs[2].Value != "down" || !knobs[2].NIC {
		t.Errorf("knobs %+v (eth0 is the topology's NIC)", knobs)
	}
	// Writes of other files set no knob.
	for _, p := range []string{"/sys/class/net/eth0/gro_flush_timeout", "/sys/class/net/../threaded",
		"/sys/class/net/eth0/queues/tx-0/rps_cpus", "/sys/class/net/eth0/queues/rx-x/rps_cpus"} {
		if ks := (&scenarios.Step{Write: &scenarios.Write{Path: p}}).Knobs(); len(ks) > 0 {
			t.Errorf("a write of %s counted as a knob: %+v", p, ks)
		}
	}
	// An exec or kselftest step may change any device while it runs.
	for _, st := range []*scenarios.Step{{Exec: &scenarios.Exec{}}, {Kselftest: scenarios.StringList{"net:veth.sh"}}} {
		if ks := st.Knobs(); len(ks) != 1 || ks[0].Kind != results.KnobUnknown || ks[0].Dev != "*" || ks[0].Value == "" {
			t.Errorf("%+v: knobs %+v", st, ks)
		}
	}
	ks := (&scenarios.Step{Write: &scenarios.Write{Path: "/sys/class/net/eth0/queues/rx-1/rps_cpus"}}).Knobs()
	if len(ks) != 1 || ks[0].Kind != results.KnobRPS || ks[0].Queue == nil || *ks[0].Queue != 1 {
		t.Errorf("rps_cpus write: %+v", ks)
	}
}

func TestInvariantsOnTheRecord(t *testing.T) {
	for _, tc := range []struct {
		name         string
		softirqUntil float64
		failed       string
	}{
		{"softirq stops at the flip", 1.01, ""},
		{"softirq goes on polling a threaded NAPI", 2.5, "threaded-not-softirq"},
		{"softirq polls through threaded and down", 3.9, "threaded-not-softirq,down-not-polled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := knobTimeline(t, tc.softirqUntil)
			got := tl.invariants("6.1.192", tl.knobs(), nil)
			var failed []string
			for _, a := range got {
				if a.Kind != results.KindInvariant {
					t.Errorf("kind %q", a.Kind)
				}
				if !a.Passed {
					failed = append(failed, a.Name)
				}
			}
			if strings.Join(failed, ",") != tc.failed {
				t.Fatalf("failed %v, want %q: %+v", failed, tc.failed, got)
			}
			// The failed threaded=0 leaves the mode unknown: softirq-not-kthread
			// is never judged, though the kthread polls after it.
			for _, a := range got {
				if a.Name == "softirq-not-kthread" {
					t.Errorf("judged after a refused change: %+v", a)
				}
			}
			// A scenario can turn an invariant off.
			tl.s.Invariants.Off = map[string]string{"threaded-not-softirq": "why", "down-not-polled": "why"}
			for _, a := range tl.invariants("6.1.192", tl.knobs(), nil) {
				if !a.Passed || a.Measured != "off: why" {
					t.Errorf("turned off, yet %+v", a)
				}
			}
		})
	}
}

func TestBusyPollerKnobs(t *testing.T) {
	tl := knobTimeline(t, 1)
	var start, stop *scenarios.Step
	for _, st := range tl.s.Timeline {
		switch {
		case len(st.Start) > 0:
			start = st
		case len(st.Stop) > 0:
			stop = st
		}
	}
	tl.iters[start] = []iteration{{start: 0.5, done: 0.6}}
	tl.iters[stop] = []iteration{{start: 3.8, done: 3.9}}
	var got []string
	for _, k := range tl.knobs() {
		if k.Kind == results.KnobBusyPoller {
			got = append(got, fmt.Sprintf("%s %s %.1f-%.1f line %d", k.Dev, k.Value, k.Start, k.Done, k.Line))
		}
	}
	want := fmt.Sprintf("eth0 on 0.5-0.6 line %d,eth0 off 3.8-3.9 line %d", start.Pos.Line, stop.Pos.Line)
	if strings.Join(got, ",") != want {
		t.Fatalf("busy-poller knobs %q, want %q", got, want)
	}
	// A load without busy_poll, or an AF_XDP one, starts no busy-polling receiver.
	l := tl.s.Loads["nic-udp"]
	for _, change := range []func(){func() { l.BusyPoll = 0 }, func() { l.BusyPoll, l.Kind = 50, "xsk" }} {
		change()
		if ks := tl.s.LoadKnobs(start); len(ks) != 0 {
			t.Errorf("%+v", ks)
		}
	}
}

func TestThreadListWithPolls(t *testing.T) {
	// busy-poll-threaded writes threaded: on 7.3 the napi/ kthreads are read
	// with who polled; a scenario that never sets threaded does not pay.
	tl := knobTimeline(t, 1)
	tl.kernel = model.KernelOf("7.3.4")
	if !slices.Contains(tl.windowSources(), metrics.SourceNAPIThreads) {
		t.Errorf("sources %v", tl.windowSources())
	}
	// Before 6.17 no rule needs them.
	tl.kernel = model.KernelOf("6.12.117")
	if slices.Contains(tl.windowSources(), metrics.SourceNAPIThreads) {
		t.Errorf("6.12 reads the kthreads: %v", tl.windowSources())
	}
	s, err := scenarios.Open("../scenarios/rps-ipi.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	other := newTimeline(s, 1, nil, nil, nil)
	other.kernel = model.KernelOf("7.3.4")
	if srcs := other.windowSources(); slices.Contains(srcs, metrics.SourceNAPIThreads) {
		t.Errorf("rps-ipi reads the kthreads: %v", srcs)
	}
}

func TestRequiredInvariants(t *testing.T) {
	// threaded=1 at 1.0 s lets threaded-not-softirq judge; no busy-polling
	// receiver runs, so busy-poll-reaches never applies.
	tl := knobTimeline(t, 1.01)
	tl.s.Invariants.Require = []string{"threaded-not-softirq", "busy-poll-reaches"}
	got := map[string]results.Assert{}
	for _, a := range tl.invariants("6.1.192", tl.knobs(), nil) {
		got[a.Name] = a
	}
	if a := got["threaded-not-softirq"]; !a.Passed || a.Unmeasured {
		t.Errorf("a required invariant that held: %+v", a)
	}
	a, ok := got["busy-poll-reaches"]
	if !ok || a.Passed || !a.Unmeasured || !strings.Contains(a.Measured, "required by the scenario") {
		t.Errorf("a required invariant never judged: %+v, want failed and not measured (ERROR)", a)
	}
	// Without require it is left out, as before.
	tl.s.Invariants.Require = nil
	for _, a := range tl.invariants("6.1.192", tl.knobs(), nil) {
		if a.Name == "busy-poll-reaches" {
			t.Errorf("listed without require: %+v", a)
		}
	}
}

// TestLoadsFeedLiveness: a load's result names the device its packets
// arrive on and what its sender sent per bucket on the timeline's clock: a
// host sender's as the injector counted it, a guest sender's placed by the
// guest clock the snapshots teach.
func TestLoadsFeedLiveness(t *testing.T) {
	tl := knobTimeline(t, 1)
	tl.stats["nic-udp"] = &loadResult{sent: 30, sending: []uint64{10, 10, 10}, sendingFrom: 1.5, sink: &wire.LoadStats{Packets: 30}}
	ls := tl.loadResults()
	if len(ls) != 1 || ls[0].Dev != "eth0" || ls[0].SendingFrom != 1.5 || len(ls[0].Sending) != 3 {
		t.Fatalf("host sender: %+v", ls)
	}
	// Conservation reads where it went: a udp load from the host, both
	// counts known.
	if ls[0].Kind != "udp" || !ls[0].FromHost {
		t.Errorf("host sender's kind %q, from host %v", ls[0].Kind, ls[0].FromHost)
	}
	tl.stats["nic-udp"] = &loadResult{sent: 30} // the sink's stop failed
	if ls := tl.loadResults(); ls[0].Kind != "" {
		t.Errorf("kind %q without the sink's count: conservation would judge it", ls[0].Kind)
	}
	srcs := tl.metricSources()
	for _, want := range []string{"snmp", "netdev", "ethtool::eth0", "softnet_stat", model.ArpSource} {
		if !slices.Contains(srcs, want) {
			t.Errorf("the metrics snapshots do not read %s: %v", want, srcs)
		}
	}
	// A guest sender that started at guest uptime 51: 1s into the timeline
	// (the snapshots read at host t+0.01 took 5 ms at guest time 50+t).
	tl.stats["nic-udp"] = &loadResult{sent: 20, sender: &wire.LoadStats{Packets: 20, Start: 51, Buckets: []uint64{10, 10}}}
	ls = tl.loadResults()
	if got := ls[0].SendingFrom; got < 0.99 || got > 1.02 || len(ls[0].Sending) != 2 {
		t.Errorf("guest sender placed at %.3fs (%+v): want ~1.005s", got, ls[0])
	}
}

// TestStreamLoadsFeedNothing: a TCP sender's writes and an rr client's
// transactions are not packets on the wire: they say nothing of liveness.
func TestStreamLoadsFeedNothing(t *testing.T) {
	s, err := scenarios.Open("../scenarios/rr-latency.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := newTimeline(s, 1, nil, nil, nil)
	tl.samples = []sampleRec{{Group: pollsGroup, Host: 1, Data: wire.Sample{T: 51, Took: 0.005}}}
	for name := range s.Loads {
		tl.stats[name] = &loadResult{sent: 20, sender: &wire.LoadStats{Packets: 20, Start: 51, Buckets: []uint64{10, 10}}}
	}
	for _, l := range tl.loadResults() {
		// rr-latency's noise is udp: it feeds the rule.
		if datagrams := s.Loads[l.Name].Kind == "udp"; (l.Sending != nil) != datagrams || l.Dev == "" {
			t.Errorf("%s (%s): sending %v to %q", l.Name, s.Loads[l.Name].Kind, l.Sending, l.Dev)
		}
	}
}
