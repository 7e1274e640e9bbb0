package model

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/metrics"
)

func busyPoller(start float64, v string) results.Knob {
	return results.Knob{Step: "start nic-udp", Line: 30, Start: start, Done: start + 0.01, Dev: "eth0", Kind: results.KnobBusyPoller, Value: v}
}

// pkts is a line with packets: one per poll.
func pkts(napi, ctx string, cpu int, n uint64) metrics.PollLine {
	l := line("eth0", napi, ctx, cpu, n)
	l.Packets = n
	return l
}

func TestBusyPollReaches(t *testing.T) {
	// threaded=1 at 0.1 s, the busy-polling receiver from 0.3 s to 5 s,
	// threaded=0 at 2.5 s: two phases of the receiver's.
	knobs := []results.Knob{threaded(0.1, 0.12, "1"), busyPoller(0.3, results.BusyPollerOn), threaded(2.5, 2.52, "0"), busyPoller(5, results.BusyPollerOff)}
	always := counter(func(float64) bool { return true })
	for _, tc := range []struct {
		name   string
		busy   func(x float64) bool // busy polls of rx-1
		broken []float64            // phases broken, by start
	}{
		{"both phases", func(float64) bool { return true }, nil},
		{"only while softirq", func(x float64) bool { return x > 2.5 }, []float64{0.4}},
		{"once in each phase is enough", func(x float64) bool { return x > 1.5 && x < 1.52 || x > 4 && x < 4.02 }, nil},
		{"never", func(float64) bool { return false }, []float64{0.4, 2.8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy := counter(tc.busy)
			s := snaps(6, func(x float64) []metrics.PollLine {
				// Packets on rx-0 (kthread, then softirq), busy polls on rx-1: the device is judged.
				return []metrics.PollLine{pkts("rx-0", "kthread", 0, always(min(x, 2.5))), pkts("rx-0", "softirq", 0, always(max(x, 2.5))-always(2.5)),
					line("eth0", "rx-1", "busypoll", 1, busy(x))}
			})
			o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "busy-poll-reaches")
			if o.Phases != 2 || o.NAPIs != 1 {
				t.Fatalf("phases %d devices %d, want 2 and 1", o.Phases, o.NAPIs)
			}
			var got []float64
			for _, w := range o.Broken {
				got = append(got, w.From)
			}
			if len(got) != len(tc.broken) {
				t.Fatalf("broken phases from %v, want %v", got, tc.broken)
			}
			a := o.Assert()
			if a.Passed != (len(tc.broken) == 0) || a.Unmeasured {
				t.Fatalf("%+v", a)
			}
			if len(tc.broken) > 0 && (!strings.HasPrefix(a.Detail, "eth0 (threaded mode): no busypoll poll of its NAPIs in ") || !strings.Contains(a.Detail, "packets")) {
				t.Errorf("detail %q", a.Detail)
			}
		})
	}
}

func TestBusyPollReachesNeedsItsReceiver(t *testing.T) {
	always := counter(func(float64) bool { return true })
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{pkts("rx-0", "kthread", 0, always(x))}
	})
	// No busy-polling receiver: the rule never applies.
	if outs := Check(Record{Kernel: Kernel{}, Knobs: []results.Knob{threaded(0.1, 0.12, "1")}, Snaps: s}, rules); len(outs) != 1 || outs[0].Rule.Name != "threaded-not-softirq" {
		t.Fatalf("%+v", outs)
	}
	// Threaded busy-poll mode: the kthread keeps SCHED, so no busy polls are owed.
	knobs := []results.Knob{threaded(0.1, 0.12, "busy-poll"), busyPoller(0.2, results.BusyPollerOn)}
	for _, o := range Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules) {
		if o.Rule.Name == "busy-poll-reaches" {
			t.Fatalf("judged in threaded busy-poll mode: %+v", o)
		}
	}
	// The device down or no packets: nothing is owed either.
	knobs = []results.Knob{busyPoller(0.2, results.BusyPollerOn), {Step: "down", Start: 0.3, Done: 0.35, Dev: "eth0", Kind: results.KnobLink, Value: "down"}}
	quiet := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "kthread", 0, always(x))}
	})
	for _, o := range Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: quiet}, rules) {
		if o.Rule.Name == "busy-poll-reaches" {
			t.Fatalf("judged without packets: %+v", o)
		}
	}
}

func TestBusyPollReachesGrace(t *testing.T) {
	// The phase's only windows lie within the grace: settling, not judged.
	always := counter(func(float64) bool { return true })
	knobs := []results.Knob{threaded(0.1, 0.12, "1"), busyPoller(0.15, results.BusyPollerOn), threaded(0.7, 0.72, "0")}
	s := snaps(1.2, func(x float64) []metrics.PollLine { return []metrics.PollLine{pkts("rx-0", "kthread", 0, always(x))} })
	o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs[:3], Snaps: s[:4]}, rules), "busy-poll-reaches")
	if o.Phases != 0 || o.Settling == 0 || len(o.Broken) != 0 {
		t.Fatalf("%+v", o)
	}
}

// TestBusyPollReachesStaleNAPIId: after the device's NAPIs may have been
// added anew (GRO or XDP, a link change) a receiver's unconnected socket
// keeps the NAPI id it learned first (sk_mark_napi_id_once): no busy polls
// are owed until the receiver starts again.
func TestBusyPollReachesStaleNAPIId(t *testing.T) {
	always := counter(func(float64) bool { return true })
	busyUntil := counter(func(x float64) bool { return x < 1.5 })
	s := snaps(4, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{pkts("rx-0", "softirq", 0, always(x)), line("eth0", "rx-0", "busypoll", 1, busyUntil(x))}
	})
	gro := results.Knob{Step: "gro off", Line: 9, Start: 1.5, Done: 1.52, Dev: "eth0", Kind: results.KnobNAPIs, Value: "gro off"}
	bounce := results.Knob{Step: "link down", Line: 9, Start: 1.5, Done: 1.52, Dev: "eth0", Kind: results.KnobLink, Value: "down"}
	up := results.Knob{Step: "link up", Line: 10, Start: 1.6, Done: 1.62, Dev: "eth0", Kind: results.KnobLink, Value: "up"}
	for _, tc := range []struct {
		name   string
		knobs  []results.Knob
		broken int
	}{
		{"threaded flip: the same NAPIs", []results.Knob{threaded(0.02, 0.04, "0"), busyPoller(0.1, results.BusyPollerOn), threaded(1.5, 1.52, "0")}, 1},
		{"GRO: NAPIs anew", []results.Knob{threaded(0.02, 0.04, "0"), busyPoller(0.1, results.BusyPollerOn), gro}, 0},
		{"link bounce: NAPIs anew", []results.Knob{threaded(0.02, 0.04, "0"), busyPoller(0.1, results.BusyPollerOn), bounce, up}, 0},
		{"the receiver starts again", []results.Knob{threaded(0.02, 0.04, "0"), busyPoller(0.1, results.BusyPollerOn), gro,
			busyPoller(1.7, results.BusyPollerOff), busyPoller(1.8, results.BusyPollerOn)}, 1},
	} {
		o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: tc.knobs, Snaps: s}, rules), "busy-poll-reaches")
		if len(o.Broken) != tc.broken {
			t.Errorf("%s: %d phases broken, want %d: %+v", tc.name, len(o.Broken), tc.broken, o.Broken)
		}
	}
}

// TestBusyPollReachesOverload: while ksoftirqd polls the device (NET_RX
// overloaded) its NAPIs stay scheduled and napi_busy_loop leaves them
// alone: such windows are not judged; softirq polls alone still are.
func TestBusyPollReachesOverload(t *testing.T) {
	always := counter(func(float64) bool { return true })
	knobs := []results.Knob{threaded(0.02, 0.04, "0"), busyPoller(0.1, results.BusyPollerOn)}
	for _, ctx := range []string{"ksoftirqd", "softirq"} {
		s := snaps(3, func(x float64) []metrics.PollLine { return []metrics.PollLine{pkts("rx-0", ctx, 0, always(x))} })
		o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "busy-poll-reaches")
		a := o.Assert()
		switch {
		case ctx == "ksoftirqd" && (!a.Passed || o.Overloaded == 0 || !strings.Contains(a.Measured, "overloaded (ksoftirqd polled)")):
			t.Errorf("polled by ksoftirqd: %+v", a)
		case ctx == "softirq" && (a.Passed || o.Overloaded != 0):
			t.Errorf("polled by softirq, no busy poll: %+v", a)
		}
	}
}

// TestBusyPollReachesShortPhase: a phase of one settled window without a
// busy poll is too short to judge (a NAPI kept busy by its own context for
// 0.2 s leaves the receiver nothing to take); two such windows break it.
func TestBusyPollReachesShortPhase(t *testing.T) {
	always := counter(func(float64) bool { return true })
	for _, tc := range []struct {
		end    float64 // threaded=0 ends the phase (settled from 0.62 s)
		broken int
	}{{1.1, 0}, {1.3, 1}} {
		knobs := []results.Knob{threaded(0.1, 0.12, "1"), busyPoller(0.15, results.BusyPollerOn), threaded(tc.end, tc.end+0.02, "0")}
		s := snaps(tc.end+0.4, func(x float64) []metrics.PollLine { return []metrics.PollLine{pkts("rx-0", "kthread", 0, always(x))} })
		o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "busy-poll-reaches")
		a := o.Assert()
		switch {
		case len(o.Broken) != tc.broken:
			t.Errorf("phase to %.1fs: %d broken, want %d: %+v", tc.end, len(o.Broken), tc.broken, o)
		case tc.broken == 0 && (o.Short != 1 || !a.Passed || !a.Unmeasured || a.Measured != "not measured: 1 phase of one window, too short to judge"):
			t.Errorf("one window: %+v, %+v", o, a)
		case tc.broken == 1 && (o.Short != 0 || o.Phases != 1 || a.Passed):
			t.Errorf("two windows: %+v, %+v", o, a)
		}
	}
}

func TestByDeviceLineByLine(t *testing.T) {
	// One task's line vanished, another's grew: the growth counts.
	prev := []metrics.PollLine{{Dev: "eth0", NAPI: "rx-0", Context: "busypoll", CPU: 1, PID: 10, Polls: 100}}
	cur := []metrics.PollLine{{Dev: "eth0", NAPI: "rx-0", Context: "busypoll", CPU: 1, PID: 11, Polls: 3}}
	if d := byDevice(prev, cur)["eth0"][NAPI{"eth0", "rx-0"}]; d.contextPolls("busypoll") != 3 || d.polls["busypoll"][1] != 3 {
		t.Fatalf("%+v", d)
	}
}

// RPS settings and backlog feeders on the device are not NAPI changes: they
// neither split a phase nor start a grace, nor unsettle a window.
func TestNonNAPIKnobsLeavePhases(t *testing.T) {
	always := counter(func(float64) bool { return true })
	knobs := []results.Knob{threaded(0.1, 0.12, "1"), busyPoller(0.15, results.BusyPollerOn)}
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{pkts("rx-0", "kthread", 0, always(x)), line("eth0", "rx-0", "busypoll", 1, always(x))}
	})
	q := 0
	more := append(slices.Clone(knobs), results.Knob{Kind: results.KnobNetifRx, Dev: "eth0", Value: "on"},
		results.Knob{Start: 1.5, Done: 1.51, Dev: "eth0", Queue: &q, Kind: results.KnobRPS, Value: "2"})
	slices.SortStableFunc(more, func(a, b results.Knob) int { return cmp.Compare(a.Start, b.Start) })
	for _, name := range []string{"busy-poll-reaches", "threaded-not-softirq"} {
		a, b := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), name), outcome(t, Check(Record{Kernel: Kernel{}, Knobs: more, Snaps: s}, rules), name)
		if a.Phases != b.Phases || a.Judged != b.Judged || a.Unsure != b.Unsure || a.Settling != b.Settling {
			t.Errorf("%s: %+v without the RPS knobs, %+v with them", name, a, b)
		}
	}
}
