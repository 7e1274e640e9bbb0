package model

import (
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/metrics"
)

// vrxSnaps reads vrx's rx-0 (and virtio-style tx@ polls beside it) every
// 0.2 s to end, counting a packet every 0.01 s where polled(t) holds;
// pause(t), when set, delays the read due at t (the guest not running).
func vrxSnaps(end float64, polled func(t float64) bool, pause func(t float64) float64) []Snapshot {
	count := counter(polled)
	var out []Snapshot
	for t := 0.0; t <= end+1e-9; t += 0.2 {
		at := t
		if pause != nil {
			at += pause(t)
		}
		n := count(at)
		out = append(out, Snapshot{From: at, To: at + 0.01, Lines: []metrics.PollLine{
			{Dev: "vrx", NAPI: "rx-0", Context: "softirq", PID: 1, Polls: n, Packets: n},
			{Dev: "vrx", NAPI: "tx@1", Context: "softirq", PID: 1, Polls: uint64(at * 100), Packets: uint64(at * 100)},
		}})
	}
	return out
}

// sending is a load that sends 10 packets per 100 ms to vrx from 0 to end,
// except where quiet(t) holds.
func sending(end float64, quiet func(t float64) bool) results.Load {
	l := results.Load{Name: "veth-udp", Dev: "vrx", Netns: "", SendingFrom: 0}
	for t := 0.0; t < end; t += 0.1 {
		v := uint64(10)
		if quiet != nil && quiet(t) {
			v = 0
		}
		l.Sending = append(l.Sending, v)
	}
	return l
}

func link(start, done float64, v string) results.Knob {
	return results.Knob{Step: "bounce", Line: 9, Start: start, Done: done, Dev: "vrx", Kind: results.KnobLink, Value: v}
}

func live(t *testing.T, knobs []results.Knob, s []Snapshot, loads []results.Load) Outcome {
	t.Helper()
	return outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s, Loads: loads}, rules), "rx-live")
}

func TestRxLive(t *testing.T) {
	always := func(float64) bool { return true }
	stallAt := func(from, to float64) func(float64) bool {
		return func(t float64) bool { return t < from || t >= to }
	}
	for _, tc := range []struct {
		name   string
		knobs  []results.Knob
		polled func(float64) bool
		quiet  func(float64) bool // the sender sends nothing
		pause  func(float64) float64
		skew   float64 // the sender's buckets placed this late
		broken int
		unsure int
	}{
		{name: "polled throughout", polled: always},
		{name: "a short silence", polled: stallAt(2, 2.6)},
		{name: "stalled while sending", polled: stallAt(2, 4), broken: 1},
		{name: "silent while the sender paused, then polled", polled: stallAt(2, 3.8), quiet: func(t float64) bool { return t >= 1.9 && t < 3.5 }},
		{name: "silent while the sender is", polled: stallAt(2, 4), quiet: func(t float64) bool { return t >= 1.9 && t < 4.1 }},
		{name: "silent while the link is down", polled: stallAt(2, 4), knobs: []results.Knob{link(2.0, 2.02, "down"), link(3.9, 3.95, "up")}},
		{name: "stalled after the link came up", polled: stallAt(2, 6), knobs: []results.Knob{link(2.0, 2.02, "down"), link(2.5, 2.55, "up")}},
		{name: "stalled through threaded flips", polled: stallAt(2, 4), broken: 1,
			knobs: []results.Knob{{Step: "flip", Line: 5, Start: 2.5, Done: 2.51, Dev: "vrx", Kind: results.KnobThreaded, Value: "1"},
				{Step: "flip", Line: 5, Start: 3.0, Done: 3.01, Dev: "vrx", Kind: results.KnobThreaded, Value: "0"}}},
		// The sender stopped as a read was taken: its last packets, polled
		// before the read, seem sent after it by the clocks' few ms.
		{name: "the sender stopped at a read", polled: func(t float64) bool { return t < 2 },
			quiet: func(t float64) bool { return t >= 2.05 }, skew: 0.012},
		{name: "an exec step ran through the silence", polled: stallAt(2, 4),
			knobs: []results.Knob{{Step: "exec", Line: 4, Start: 1.9, Done: 4.1, Dev: "*", Kind: results.KnobUnknown, Value: "run"}}},
		{name: "a link flip inside a running exec step", polled: func(t float64) bool { return t < 2 || t >= 2.8 && t < 3.4 || t >= 5 },
			knobs: []results.Knob{{Step: "exec", Line: 4, Start: 1.9, Done: 5.1, Dev: "*", Kind: results.KnobUnknown, Value: "run"},
				link(2.5, 2.52, "down"), link(2.6, 2.62, "up")}},
		{name: "silence cut by a change", polled: stallAt(2, 4), knobs: []results.Knob{{Step: "gro", Line: 3, Start: 2.7, Done: 2.75, Dev: "vrx", Kind: results.KnobNAPIs, Value: "off"}}},
		{name: "the guest did not run", polled: stallAt(2, 4), pause: func(t float64) float64 {
			if t >= 2.4 && t < 3.6 {
				return 3.6 - t
			}
			return 0
		}, unsure: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := sending(6, tc.quiet)
			l.SendingFrom += tc.skew
			o := live(t, tc.knobs, vrxSnaps(6, tc.polled, tc.pause), []results.Load{l})
			if len(o.Broken) != tc.broken || o.Unsure != tc.unsure {
				t.Fatalf("broken %d, unsure %d: want %d, %d (%+v)", len(o.Broken), o.Unsure, tc.broken, tc.unsure, o.Broken)
			}
			if o.Judged == 0 || o.NAPIs != 1 {
				t.Errorf("judged %d windows of %d devices: want some of 1", o.Judged, o.NAPIs)
			}
		})
	}
}

// TestRxLiveRouted: a load routed through a forwarding namespace is not
// judged: a change on the way (the router's NIC down) silences it too.
func TestRxLiveRouted(t *testing.T) {
	l := sending(6, nil)
	l.Routed = true
	outs := Check(Record{Snaps: vrxSnaps(6, func(t float64) bool { return t < 2 || t >= 4 }, nil), Loads: []results.Load{l}},
		[]*Rule{RuleNamed("rx-live")})
	for _, o := range outs {
		if o.Judged > 0 || len(o.Broken) > 0 {
			t.Fatalf("a routed load was judged: %+v", o)
		}
	}
	l.Routed = false
	if o := live(t, nil, vrxSnaps(6, func(t float64) bool { return t < 2 || t >= 4 }, nil), []results.Load{l}); len(o.Broken) != 1 {
		t.Fatalf("the same silence of a load not routed: broken %d, want 1", len(o.Broken))
	}
}

// TestRxLiveEvidence: a device that polled before its link went
// down is held to the rule only once it polls again: a NAPI that never
// came back after the link did is not a silence this rule sees (a hang's,
// or the scenario's delivery assertions'), and one that came back and
// stopped is.
func TestRxLiveEvidence(t *testing.T) {
	polled := func(t float64) bool { return t < 2 || (t >= 2.8 && t < 3.6) }
	knobs := []results.Knob{link(2.0, 2.02, "down"), link(2.5, 2.55, "up")}
	o := live(t, knobs, vrxSnaps(6, polled, nil), []results.Load{sending(6, nil)})
	if len(o.Broken) != 1 {
		t.Fatalf("broken %d: want the silence from 3.6s", len(o.Broken))
	}
	w := o.Broken[0]
	if w.From < 3.6 || w.From > 3.9 || w.To < 5.7 {
		t.Errorf("silence %.2f-%.2fs: want from ~3.6s to the last read", w.From, w.To)
	}
	a := o.Assert()
	if a.Passed || !strings.Contains(a.Detail, "vrx: what its loads sent from 3.") || !strings.Contains(a.Detail, "link up") {
		t.Errorf("assert %+v", a)
	}
	// Never polled again after the link came up: not judged here.
	o = live(t, knobs, vrxSnaps(6, func(t float64) bool { return t < 2 }, nil), []results.Load{sending(6, nil)})
	if len(o.Broken) != 0 {
		t.Errorf("a device silent since its link came up broke it: %+v", o.Broken)
	}
}

// TestRxLiveAmbiguous: two devices of one name in two namespaces are not
// judged (polls name the device, not its namespace), nor is a load whose
// sender's buckets are unknown.
func TestRxLiveAmbiguous(t *testing.T) {
	s := vrxSnaps(6, func(t float64) bool { return t < 2 }, nil)
	other := sending(6, nil)
	other.Netns = "peer"
	if outs := Check(Record{Kernel: Kernel{}, Knobs: nil, Snaps: s, Loads: []results.Load{sending(6, nil), other}}, rules); len(outs) != 0 {
		t.Errorf("judged %+v", outs)
	}
	blind := sending(6, nil)
	blind.Sending = nil
	if outs := Check(Record{Kernel: Kernel{}, Knobs: nil, Snaps: s, Loads: []results.Load{blind}}, rules); len(outs) != 0 {
		t.Errorf("judged %+v", outs)
	}
}
