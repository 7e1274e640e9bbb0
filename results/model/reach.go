package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"napilab/results"
	"napilab/results/metrics"
)

// A phase is a device's stretch between two of its knobs. checkReach
// judges a rule with reaches per device and phase: over the phase's
// settled windows past the grace in which the rule applies to every NAPI
// of the device that polled packets, r.reaches must poll one of them at
// least once. One window is too short a test: a receiver under a flood
// may not find its queue empty for 200 ms, so a phase of a single settled
// window without a poll by r.reaches is short, not judged. A window in
// which ksoftirqd polled the device and the receiver did not is
// overloaded, not judged.
func checkReach(r *Rule, knobs []results.Knob, snaps []Snapshot) Outcome {
	o := Outcome{Rule: r}
	type key struct {
		dev   string
		phase int
	}
	type phase struct {
		from, to      float64
		windows       int
		packets, seen uint64 // packets the NAPIs polled; polls by r.reaches
		state         State
		first         float64 // end of the first window r.reaches polled in, settling or not (-1: none)
		start         float64 // the knob that began the phase returned (-1: none did)
	}
	phases := map[key]*phase{}
	var order []key
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		from, to := a.From, b.To
		for dev, napis := range byDevice(a.Lines, b.Lines) {
			applies, sure, settling := true, true, false
			var st State
			var pk, seen, deferred uint64
			for _, n := range slices.SortedFunc(maps.Keys(napis), compareNAPI) {
				d := napis[n]
				s, ok := stateIn(knobs, n, from, to)
				sure = sure && ok
				if d.packets > 0 && !r.applies(s) {
					applies = false
				}
				if d.packets > 0 && pk == 0 {
					st = s
				}
				pk += d.packets
				seen += d.contextPolls(r.reaches)
				deferred += d.contextPolls("ksoftirqd")
			}
			if !applies || pk == 0 {
				continue
			}
			if !sure {
				o.Unsure++
				continue
			}
			if deferred > 0 && seen == 0 {
				// NET_RX overloaded, left to ksoftirqd: the NAPIs stay on
				// its poll list (SCHED), and napi_busy_loop leaves a
				// scheduled NAPI alone.
				o.Overloaded++
				continue
			}
			idx, last := lastKnob(knobs, dev, from, napiKnob)
			st.By = last // the phase's start, which may be a receiver's
			start := -1.0
			if last != nil {
				start = last.Done
				if from < last.Done+r.Grace {
					settling = true
				}
			}
			k := key{dev, idx}
			p := phases[k]
			if p == nil {
				p = &phase{from: -1, state: st, first: -1, start: start}
				phases[k] = p
			}
			if seen > 0 && p.first < 0 {
				p.first = to
			}
			if settling {
				o.Settling++
				continue
			}
			if p.from < 0 {
				p.from = from
				order = append(order, k)
			}
			p.to, p.windows = to, p.windows+1
			p.packets += pk
			p.seen += seen
			o.Judged++
		}
	}
	devs := map[string]bool{}
	for _, k := range order {
		p := phases[k]
		if p.seen == 0 && p.windows < minPhaseWindows {
			o.Short++
			o.Judged -= p.windows
			continue
		}
		devs[k.dev] = true
		if p.seen > 0 {
			if p.start >= 0 {
				o.Lags = append(o.Lags, p.first-p.start)
			}
			continue
		}
		w := Window{NAPI: NAPI{Dev: k.dev}, From: p.from, To: p.to, State: p.state, After: -1,
			Packets: p.packets, Windows: p.windows, Missing: r.reaches}
		if p.start >= 0 {
			w.After = p.from - p.start
		}
		o.Broken = append(o.Broken, w)
	}
	o.Phases = len(order) - o.Short
	o.NAPIs = len(devs)
	return o
}

// minPhaseWindows is the fewest settled windows a phase without a busy
// poll needs to be judged: in one 0.11-0.2 s window a NAPI kept busy by
// its own context may leave the receiver nothing to take (seeds 5038 and
// 9076 of lab explore, docs/invariants.md).
const minPhaseWindows = 2

// delta is what a NAPI did between two snapshots.
type delta struct {
	packets uint64                    // packets polled
	cpus    map[int]uint64            // packets polled, by CPU
	polls   map[string]map[int]uint64 // polls by context, then CPU
}

// contextPolls sums a context's polls over CPUs.
func (d *delta) contextPolls(ctx string) uint64 {
	var n uint64
	for _, c := range d.polls[ctx] {
		n += c
	}
	return n
}

// work returns what each NAPI did between two snapshots, line by line
// (NAPI, context, CPU, task): a line that went back or vanished (the
// agent's map lost it) counts as nothing. Every NAPI of cur is listed.
func work(prev, cur []metrics.PollLine) map[NAPI]*delta {
	type line struct {
		dev, napi, ctx string
		cpu, pid       int
	}
	before := map[line]metrics.PollLine{}
	for _, l := range prev {
		before[line{l.Dev, l.NAPI, l.Context, l.CPU, l.PID}] = l
	}
	out := map[NAPI]*delta{}
	for _, l := range cur {
		n := NAPI{l.Dev, l.NAPI}
		d := out[n]
		if d == nil {
			d = &delta{cpus: map[int]uint64{}, polls: map[string]map[int]uint64{}}
			out[n] = d
		}
		p := before[line{l.Dev, l.NAPI, l.Context, l.CPU, l.PID}]
		if l.Packets > p.Packets {
			d.packets += l.Packets - p.Packets
			d.cpus[l.CPU] += l.Packets - p.Packets
		}
		if l.Polls > p.Polls {
			if d.polls[l.Context] == nil {
				d.polls[l.Context] = map[int]uint64{}
			}
			d.polls[l.Context][l.CPU] += l.Polls - p.Polls
		}
	}
	return out
}

// byDevice groups work by device.
func byDevice(prev, cur []metrics.PollLine) map[string]map[NAPI]*delta {
	out := map[string]map[NAPI]*delta{}
	for n, d := range work(prev, cur) {
		if out[n.Dev] == nil {
			out[n.Dev] = map[NAPI]*delta{}
		}
		out[n.Dev][n] = d
	}
	return out
}

// lastKnob returns the index and the last of dev's knobs (or every
// device's: Dev "*") of a kind that counts issued before t (-1 and nil:
// none).
func lastKnob(knobs []results.Knob, dev string, t float64, counts func(kind string) bool) (int, *results.Knob) {
	idx := -1
	for i := range knobs {
		if (knobs[i].Dev == dev || knobs[i].Dev == "*") && knobs[i].Start < t && counts(knobs[i].Kind) {
			idx = i
		}
	}
	if idx < 0 {
		return -1, nil
	}
	return idx, &knobs[idx]
}

// describeReach says what a broken phase saw.
func (w Window) describeReach() string {
	s := fmt.Sprintf("%s (%s mode): no %s poll of its NAPIs in %d windows (%.2f-%.2fs) while they polled %d packets",
		w.NAPI.Dev, w.State.Mode, w.Missing, w.Windows, w.From, w.To, w.Packets)
	if w.After >= 0 {
		s += fmt.Sprintf(", from %.2fs after %s", w.After, w.State.describe())
	}
	return s
}

func compareNAPI(a, b NAPI) int {
	return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Name, b.Name))
}
