package model

import (
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/metrics"
)

// snaps builds snapshots every 0.2 s from 0 to end; polls(t) gives the
// cumulative lines read at t.
func snaps(end float64, polls func(t float64) []metrics.PollLine) []Snapshot {
	var out []Snapshot
	for t := 0.0; t <= end+1e-9; t += 0.2 {
		out = append(out, Snapshot{From: t, To: t + 0.01, Lines: polls(t)})
	}
	return out
}

// counter counts one poll every 0.01 s of the spans where on(t) holds.
func counter(on func(t float64) bool) func(t float64) uint64 {
	return func(t float64) uint64 {
		var n uint64
		for x := 0.0; x < t; x += 0.01 {
			if on(x) {
				n++
			}
		}
		return n
	}
}

func line(dev, napi, ctx string, cpu int, polls uint64) metrics.PollLine {
	return metrics.PollLine{Dev: dev, NAPI: napi, Context: ctx, CPU: cpu, PID: 1, Polls: polls}
}

func threaded(start, done float64, v string) results.Knob {
	return results.Knob{Step: "flip", Line: 7, Start: start, Done: done, Dev: "eth0", Kind: results.KnobThreaded, Value: v}
}

// rules are Rules with the graces these tests were written for (mode
// rules 0.5 s, down 0.05 s): the shipped graces follow measurements.
var rules = func() []*Rule {
	var out []*Rule
	for _, r := range Rules {
		c := *r
		c.Grace = map[string]float64{"down-not-polled": 0.05}[r.Name]
		if c.Grace == 0 {
			c.Grace = 0.5
		}
		out = append(out, &c)
	}
	return out
}()

func outcome(t *testing.T, outs []Outcome, name string) Outcome {
	t.Helper()
	for _, o := range outs {
		if o.Rule.Name == name {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %v", name, outs)
	return Outcome{}
}

func TestThreadedNotSoftirq(t *testing.T) {
	knobs := []results.Knob{threaded(1.0, 1.05, "1")}
	for _, tc := range []struct {
		name         string
		softirqUntil float64 // softirq keeps polling eth0/rx-0 until then
		broken       int
		settling     bool
	}{
		{"switches at once", 1.05, 0, false},
		{"settles within the grace", 1.3, 0, true},
		{"softirq past the grace", 2.5, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			soft := counter(func(x float64) bool { return x < tc.softirqUntil })
			kth := counter(func(x float64) bool { return x >= 1.05 })
			s := snaps(3, func(x float64) []metrics.PollLine {
				return []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, soft(x)), line("eth0", "rx-0", "kthread", 1, kth(x))}
			})
			o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq")
			if len(o.Broken) != tc.broken || (o.Settling > 0) != tc.settling || o.NAPIs != 1 || o.Judged == 0 {
				t.Fatalf("broken %d settling %d napis %d judged %d, want broken %d settling %v", len(o.Broken), o.Settling, o.NAPIs, o.Judged, tc.broken, tc.settling)
			}
			a := o.Assert()
			if a.Passed != (tc.broken == 0) || a.Kind != results.KindInvariant || a.Unmeasured {
				t.Fatalf("assert %+v", a)
			}
			if tc.broken > 0 && !strings.Contains(a.Detail, `eth0/rx-0: `) || tc.broken > 0 && !strings.Contains(a.Detail, `after step "flip" (line 7) set threaded=1 at 1.05s`) {
				t.Errorf("detail %q", a.Detail)
			}
			// Softirq polls while threaded=0 (before the knob) are allowed.
			if so := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq"); so.Broken != nil && so.Broken[0].From < 1 {
				t.Errorf("a window before the change was judged: %+v", so.Broken[0])
			}
		})
	}
}

func TestSoftirqNotKthreadPerNAPI(t *testing.T) {
	// napi-set threaded=disabled on queue 1 only: rx-0 stays threaded, rx-1
	// must no longer be polled by its kthread; a NAPI of unknown queue is
	// not judged.
	q1 := 1
	knobs := []results.Knob{threaded(0.1, 0.15, "1"), {Step: "one queue", Line: 9, Start: 1, Done: 1.02, Dev: "eth0", Queue: &q1, Kind: results.KnobThreaded, Value: "disabled"}}
	kth := counter(func(x float64) bool { return x > 0.2 })
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "kthread", 0, kth(x)), line("eth0", "rx-1", "kthread", 1, kth(x)), line("eth0", "tx@ffff", "kthread", 1, kth(x))}
	})
	o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "softirq-not-kthread")
	if len(o.Broken) == 0 || o.NAPIs != 1 {
		t.Fatalf("want rx-1 broken, alone judged: %+v", o)
	}
	for _, w := range o.Broken {
		if w.NAPI.Name != "rx-1" {
			t.Errorf("judged %s", w.NAPI)
		}
	}
	if !strings.Contains(o.Assert().Detail, "eth0/rx-1: ") || !strings.Contains(o.Assert().Detail, "kthread polls (cpu1 ") {
		t.Errorf("detail %q", o.Assert().Detail)
	}
}

func TestDownNotPolled(t *testing.T) {
	knobs := []results.Knob{{Step: "bounce", Line: 3, Start: 1, Done: 1.1, Dev: "eth0", Kind: results.KnobLink, Value: "down"},
		{Step: "bounce", Line: 3, Start: 2, Done: 2.1, Dev: "eth0", Kind: results.KnobLink, Value: "up"}}
	for _, tc := range []struct {
		name   string
		poll   func(x float64) bool
		broken bool
	}{
		{"quiet while down", func(x float64) bool { return x < 1.05 || x > 2.05 }, false},
		{"busy poll while down", func(x float64) bool { return x < 1.05 || x > 1.5 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := counter(tc.poll)
			s := snaps(3, func(x float64) []metrics.PollLine {
				return []metrics.PollLine{line("eth0", "rx-0", "busypoll", 0, c(x)), line("vrx", "rx-0", "softirq", 0, c(x))}
			})
			o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "down-not-polled")
			if (len(o.Broken) > 0) != tc.broken || o.NAPIs != 1 {
				t.Fatalf("%+v", o)
			}
		})
	}
}

func TestUnsettledIsNotMeasured(t *testing.T) {
	// Every window holds a flip: nothing can be judged, and that passes.
	var knobs []results.Knob
	for x := 0.05; x < 3; x += 0.1 {
		knobs = append(knobs, threaded(x, x+0.02, []string{"1", "0"}[int(x*10)%2]))
	}
	c := counter(func(float64) bool { return true })
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, c(x)), line("eth0", "rx-0", "kthread", 0, c(x))}
	})
	for _, o := range Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules) {
		if o.Judged != 0 || o.Unsure == 0 {
			t.Fatalf("%s: judged %d unsure %d", o.Rule.Name, o.Judged, o.Unsure)
		}
		if a := o.Assert(); !a.Passed || !a.Unmeasured || !strings.HasPrefix(a.Measured, "not measured") {
			t.Errorf("%+v", a)
		}
	}
}

func TestNotExercisedLeftOut(t *testing.T) {
	c := counter(func(float64) bool { return true })
	s := snaps(1, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, c(x))}
	})
	if outs := Check(Record{Kernel: Kernel{}, Knobs: nil, Snaps: s}, rules); len(outs) != 0 {
		t.Fatalf("no knob turned, yet %d outcomes", len(outs))
	}
	// A refused change leaves the mode unknown: not judged either.
	k := threaded(0.1, 0.2, "1")
	k.Failed = true
	if outs := Check(Record{Kernel: Kernel{}, Knobs: []results.Knob{k}, Snaps: s}, rules); len(outs) != 0 {
		t.Fatalf("a refused change was judged: %+v", outs)
	}
}

func TestLostEntryIsNoPoll(t *testing.T) {
	// A count that went down (the agent's map lost the entry) is no poll.
	knobs := []results.Knob{threaded(0, 0.01, "1")}
	s := []Snapshot{{From: 1, To: 1, Lines: []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, 50)}},
		{From: 1.2, To: 1.2, Lines: []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, 3)}}}
	if o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq"); len(o.Broken) != 0 || o.Judged != 1 {
		t.Fatalf("%+v", o)
	}
}

func TestModeOf(t *testing.T) {
	for v, m := range map[string]Mode{"0": ModeSoftirq, "1\n": ModeThreaded, "disabled": ModeSoftirq, "enabled": ModeThreaded, "busy-poll": ModeBusyPoll, "x": ModeUnknown} {
		if got := modeOf(v); got != m {
			t.Errorf("modeOf(%q) = %v, want %v", v, got, m)
		}
	}
	if RuleNamed("down-not-polled") == nil || RuleNamed("nope") != nil || len(Names()) != len(Rules) {
		t.Error("RuleNamed/Names")
	}
}

func TestNAPIsAnewRestartTheGrace(t *testing.T) {
	// veth's GRO back on adds its NAPI anew: softirq polls just after it
	// settle, the mode stays threaded, and polls past the grace break it.
	knobs := []results.Knob{threaded(0.1, 0.15, "1"),
		{Step: "gro vrx", Line: 5, Start: 2, Done: 2.02, Dev: "eth0", Kind: results.KnobNAPIs, Value: "on"}}
	soft := counter(func(x float64) bool { return x > 2.02 && x < 2.3 || x > 3.5 })
	s := snaps(4, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, soft(x))}
	})
	o := outcome(t, Check(Record{Kernel: Kernel{}, Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq")
	if o.Settling == 0 || len(o.Broken) == 0 || o.Broken[0].From < 3.3 {
		t.Fatalf("%+v", o)
	}
	if d := o.Assert().Detail; !strings.Contains(d, `step "gro vrx" (line 5) set GRO/XDP on at 2.02s`) {
		t.Errorf("detail %q", d)
	}
}

func TestSegments(t *testing.T) {
	knobs := []results.Knob{threaded(1, 1.1, "1"),
		{Step: "bounce", Line: 3, Start: 2, Done: 2.2, Dev: "eth0", Kind: results.KnobLink, Value: "down"},
		{Step: "other", Line: 4, Start: 1.5, Done: 1.6, Dev: "vrx", Kind: results.KnobThreaded, Value: "0"}}
	got := Segments(knobs, NAPI{"eth0", "rx-0"}, 3)
	want := []struct {
		from, to float64
		mode     Mode
		down     bool
		changing bool
	}{{0, 1, ModeUnknown, false, false}, {1, 1.1, ModeThreaded, false, true}, {1.1, 2, ModeThreaded, false, false},
		{2, 2.2, ModeThreaded, true, true}, {2.2, 3, ModeThreaded, true, false}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.from || g.To != w.to || g.State.Mode != w.mode || g.State.Down != w.down || g.Changing != w.changing {
			t.Errorf("segment %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestNAPISetSkipsUnknownNAPIs(t *testing.T) {
	// napi-set busy-poll on eth0 (threaded-busy-poll on 7.3): the TX NAPI
	// has no id, napi-set never reached it, softirq may go on polling it.
	k := threaded(1.0, 1.05, "busy-poll")
	k.NAPISet = true
	soft := counter(func(float64) bool { return true })
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "tx@5b12c0", "ksoftirqd", 0, soft(x)), line("eth0", "rx-0", "kthread", 1, soft(x))}
	})
	o := outcome(t, Check(Record{Kernel: Kernel{7, 3}, Knobs: []results.Knob{k}, Snaps: s}, rules), "threaded-not-softirq")
	if len(o.Broken) != 0 || o.NAPIs != 1 {
		t.Fatalf("%+v", o)
	}
	// Through sysfs threaded the same softirq polls break it.
	k.NAPISet = false
	if o := outcome(t, Check(Record{Kernel: Kernel{7, 3}, Knobs: []results.Knob{k}, Snaps: s}, rules), "threaded-not-softirq"); len(o.Broken) == 0 {
		t.Fatalf("%+v", o)
	}
}

// TestRacingModeChanges: two changes of the mode under way at once (lab
// explore: sysfs threaded=1 beside napi-set disabled) leave the mode
// unknown, and nothing is judged on it; the same value twice, or one after
// the other, sets it.
func TestRacingModeChanges(t *testing.T) {
	napiSet := threaded(0.547, 0.639, "disabled")
	napiSet.NAPISet = true
	for _, tc := range []struct {
		name  string
		knobs []results.Knob
		want  Mode
	}{
		{"racing", []results.Knob{napiSet, threaded(0.547, 0.572, "1")}, ModeUnknown},
		{"same value", []results.Knob{threaded(0.5, 0.6, "1"), threaded(0.55, 0.58, "enabled")}, ModeThreaded},
		{"one after the other", []results.Knob{napiSet, threaded(0.64, 0.66, "1")}, ModeThreaded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := stateIn(tc.knobs, NAPI{Dev: "eth0", Name: "rx-0"}, 1.2, 1.4)
			if st.Mode != tc.want {
				t.Errorf("mode %v, want %v", st.Mode, tc.want)
			}
		})
	}
	// The run explore found: softirq polls rx-0 after both; nothing breaks.
	soft := counter(func(float64) bool { return true })
	s := snaps(3, func(x float64) []metrics.PollLine {
		return []metrics.PollLine{line("eth0", "rx-0", "softirq", 0, soft(x))}
	})
	racing := []results.Knob{napiSet, threaded(0.547, 0.572, "1")}
	for _, o := range Check(Record{Kernel: Kernel{7, 3}, Knobs: racing, Snaps: s}, rules) {
		if len(o.Broken) != 0 {
			t.Errorf("%s broken after racing changes: %+v", o.Rule.Name, o.Broken)
		}
	}
	// Without the race the same polls break threaded-not-softirq: the
	// check above can fail.
	if o := outcome(t, Check(Record{Kernel: Kernel{7, 3}, Knobs: racing[1:], Snaps: s}, rules), "threaded-not-softirq"); len(o.Broken) == 0 {
		t.Error("softirq polls of a threaded NAPI not judged")
	}
}

// TestRacingLinkChanges: link down beside link up (lab explore found it on
// vrx) leaves the link unknown: the window is not judged.
func TestRacingLinkChanges(t *testing.T) {
	link := func(start, done float64, v string) results.Knob {
		return results.Knob{Step: "bounce", Line: 3, Start: start, Done: done, Dev: "eth0", Kind: results.KnobLink, Value: v}
	}
	n := NAPI{Dev: "eth0", Name: "rx-0"}
	if _, ok := stateIn([]results.Knob{link(0.5, 0.6, "down"), link(0.52, 0.55, "up")}, n, 1.2, 1.4); ok {
		t.Error("racing link changes: the window is judged")
	}
	if st, ok := stateIn([]results.Knob{link(0.5, 0.6, "down"), link(0.7, 0.75, "up")}, n, 1.2, 1.4); !ok || st.Down {
		t.Errorf("down then up: ok %v down %v, want judged and up", ok, st.Down)
	}
	if _, ok := stateIn([]results.Knob{link(0.5, 0.6, "down"), link(0.52, 0.55, "up"), link(0.8, 0.85, "down")}, n, 1.2, 1.4); !ok {
		t.Error("a later link change does not settle the link again")
	}
}

// TestRenamedNAPIIsOneCounter: the agent names a NAPI by its address until
// it knows the queue (rx@a9b800, then rx-0). Its softirq polls from before
// threaded=1 are not polls of the window where the name changed (rr-tail
// on stock-6.1: "3 softirq polls, 4.09s after threaded=1").
func TestRenamedNAPIIsOneCounter(t *testing.T) {
	knobs := []results.Knob{{Step: "flip", Line: 7, Start: 1.0, Done: 1.05, Dev: "vcli", Kind: results.KnobThreaded, Value: "1"}}
	s := snaps(5, func(x float64) []metrics.PollLine {
		if x < 4 {
			return []metrics.PollLine{line("vcli", "rx@a9b800", "softirq", 0, 3)}
		}
		return []metrics.PollLine{line("vcli", "rx-0", "softirq", 0, 3), line("vcli", "rx-0", "kthread", 1, 1)}
	})
	o := outcome(t, Check(Record{Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq")
	if len(o.Broken) != 0 {
		t.Fatalf("the rename was read as softirq polls: %+v", o.Broken)
	}
	if s[0].Lines[0].NAPI != "rx@a9b800" {
		t.Error("Check changed the record's snapshots")
	}
	// A NAPI that really polls from softirq after its rename still breaks it.
	s = snaps(5, func(x float64) []metrics.PollLine {
		if x < 4 {
			return []metrics.PollLine{line("vcli", "rx@a9b800", "softirq", 0, 3)}
		}
		return []metrics.PollLine{line("vcli", "rx-0", "softirq", 0, 3+uint64((x-3.9)*100))}
	})
	if o := outcome(t, Check(Record{Knobs: knobs, Snaps: s}, rules), "threaded-not-softirq"); len(o.Broken) == 0 {
		t.Error("softirq polls after the rename were not seen")
	}
	// Two new NAPIs that could be it: no guess.
	two := []Snapshot{
		{From: 0, To: 0, Lines: []metrics.PollLine{line("vcli", "rx@1", "softirq", 0, 3)}},
		{From: 1, To: 1, Lines: []metrics.PollLine{line("vcli", "rx-0", "softirq", 0, 3), line("vcli", "rx-1", "softirq", 0, 3)}},
	}
	if got := named(two); got[0].Lines[0].NAPI != "rx@1" {
		t.Errorf("renamed to %s with two candidates", got[0].Lines[0].NAPI)
	}
}
