// Package model replays the NAPI knobs a run turned (results.Knob) into the
// state each NAPI was expected to be in, window by window, and checks who
// polled it (the agent's napi_polls snapshots) against the kernel's rules:
// the invariants every run is checked for, whatever its scenario asserts.
// It is pure: a run's record in, outcomes out.
package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
)

// Mode is what polls a NAPI: its threaded setting.
type Mode int

// The modes. A NAPI's mode is unknown before the run sets it (the lab does
// not read the boot state) and after a change the kernel refused.
const (
	ModeUnknown  Mode = iota
	ModeSoftirq       // threaded 0 / disabled: the NET_RX softirq (or ksoftirqd) polls it
	ModeThreaded      // threaded 1 / enabled: its napi/ kthread polls it
	ModeBusyPoll      // threaded busy-poll (6.19+): its kthread polls it, busy polling
)

func (m Mode) String() string {
	return [...]string{"unknown", "softirq", "threaded", "threaded busy-poll"}[m]
}

// modeOf reads a threaded knob's value: sysfs takes 0 and 1, napi-set the
// netdev_napi_threaded names.
func modeOf(v string) Mode {
	switch strings.TrimSpace(v) {
	case "0", wire.NAPIThreadedDisabled:
		return ModeSoftirq
	case "1", wire.NAPIThreadedEnabled:
		return ModeThreaded
	case "2", wire.NAPIThreadedBusyPoll:
		return ModeBusyPoll
	}
	return ModeUnknown
}

// NAPI names one NAPI as the agent reports it: the device and rx-<queue>
// (or backlog, or <role>@<address> before it returned a packet).
type NAPI struct {
	Dev, Name string
}

func (n NAPI) String() string { return n.Dev + "/" + n.Name }

// queue returns the RX queue of an rx-<n> NAPI.
func (n NAPI) queue() (int, bool) {
	q, ok := strings.CutPrefix(n.Name, "rx-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(q)
	return i, err == nil
}

// State is what a NAPI was expected to be through a window: its mode, its
// device up or down, and the change that last set either (nil: none did).
type State struct {
	Mode Mode
	Down bool
	// Busy says a busy-polling receiver runs on the device (a load with
	// busy_poll, started and not stopped).
	Busy bool
	// Stale says the device's NAPIs may have been added anew (a link
	// change, GRO or XDP) since the receiver started: an unconnected UDP
	// socket learns its NAPI id once (sk_mark_napi_id_once in
	// __udp_queue_rcv_skb), so it may busy-poll an id that is gone.
	Stale bool
	By    *results.Knob
	// ModeBy is the change that set Mode (nil: none did).
	ModeBy *results.Knob
}

// stateIn replays the knobs that touch n and returns its state through
// [from, to] (host seconds since the timeline began). ok is false when a
// change was under way in the window (issued before to, returned after
// from): the kernel applied it somewhere in its span, so the window holds
// two states; st is then the state the window ended in. A knob naming one
// queue, or set with napi-set, leaves a NAPI of unknown queue unknown from
// then on.
func stateIn(knobs []results.Knob, n NAPI, from, to float64) (st State, ok bool) {
	q, qok := n.queue()
	linkKnown, settled := true, true
	var modeSetters []*results.Knob // the threaded changes that reached n so far
	var linkSetters []*results.Knob // the link changes so far
	for i := range knobs {
		k := &knobs[i]
		if k.Dev != n.Dev || k.Start >= to || !napiKnob(k.Kind) {
			continue
		}
		if k.Done > from {
			settled = false
		}
		switch {
		case k.Kind == results.KnobBusyPoller:
			// A receiver, not the NAPIs' state: it sets no mode and
			// starts no grace of the mode rules.
			st.Busy, st.Stale = k.Value == results.BusyPollerOn, false
			continue
		case k.Kind == results.KnobLink:
			st.Stale = st.Stale || st.Busy
			// A refused link change leaves the link unknown until the next,
			// and so do two under way at once (their order is unseen).
			st.Down, linkKnown = k.Value == "down", !k.Failed && !racing(linkSetters, k, func(v string) string { return v })
			linkSetters = append(linkSetters, k)
		case k.Kind == results.KnobNAPIs:
			// The driver may have added the NAPIs anew: same mode,
			// new settling time.
			st.Stale = st.Stale || st.Busy
		case k.Kind != results.KnobThreaded:
			continue
		case (k.Queue != nil || k.NAPISet) && !qok:
			// Which NAPI this is, and so whether napi-set reached it
			// (TX NAPIs have no id), is unknown.
			st.Mode = ModeUnknown
		case k.Queue != nil && *k.Queue != q:
			continue
		case k.Failed:
			st.Mode = ModeUnknown
		case racing(modeSetters, k, modeOf):
			// Two changes of the mode were under way at once: the
			// kernel applied them in an order the host cannot see.
			st.Mode, st.ModeBy = ModeUnknown, nil
		default:
			st.Mode, st.ModeBy = modeOf(k.Value), k
		}
		if k.Kind == results.KnobThreaded {
			modeSetters = append(modeSetters, k)
		}
		st.By = k
	}
	return st, linkKnown && settled
}

// racing says k was issued while an earlier change had not returned that
// leads somewhere else (key: the state a value sets).
func racing[T comparable](earlier []*results.Knob, k *results.Knob, key func(string) T) bool {
	for _, e := range earlier {
		if e.Done > k.Start && key(e.Value) != key(k.Value) {
			return true
		}
	}
	return false
}

// napiKnob says a knob kind sets a NAPI's state (not RPS, RFS or a
// backlog feeder).
func napiKnob(kind string) bool {
	switch kind {
	case results.KnobThreaded, results.KnobLink, results.KnobNAPIs, results.KnobBusyPoller:
		return true
	}
	return false
}

// describe says which change set a state: "'toggle threaded' (line 40)
// set threaded=1 at 2.69s".
func (s State) describe() string {
	if s.By == nil {
		return "set by no step"
	}
	k := s.By
	what := k.Kind + "=" + k.Value
	switch k.Kind {
	case results.KnobLink:
		what = "link " + k.Value
	case results.KnobNAPIs:
		what = "GRO/XDP " + k.Value
	case results.KnobBusyPoller:
		what = "a busy-polling receiver " + k.Value
	case results.KnobRPS, results.KnobRFS:
		file := map[string]string{results.KnobRPS: "rps_cpus", results.KnobRFS: "rps_flow_cnt"}[k.Kind]
		what = fmt.Sprintf("%s of %s", file, k.Dev)
		if k.Queue != nil {
			what += fmt.Sprintf(" rx-%d", *k.Queue)
		}
		if k.Dev == "" {
			what = "rps_sock_flow_entries"
		}
		what += " to " + k.Value
	}
	return fmt.Sprintf("step %q (line %d) set %s at %.2fs", k.Step, k.Line, what, k.Done)
}

// Segment is a stretch of the timeline (host seconds) through which a
// NAPI's expected state held; Changing marks a change under way (issued,
// not yet returned), whose state is the one it leads to.
type Segment struct {
	From, To float64
	State    State
	Changing bool
}

// Segments replays the knobs that touch n over [0, end], for drawing the
// expected state under who polled: a segment starts at every change's
// issue and every change's return.
func Segments(knobs []results.Knob, n NAPI, end float64) []Segment {
	cuts := []float64{0}
	for _, k := range knobs {
		if k.Dev == n.Dev && k.Start < end && napiKnob(k.Kind) {
			cuts = append(cuts, k.Start, min(k.Done, end))
		}
	}
	cuts = append(cuts, end)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []Segment
	for i := 1; i < len(cuts); i++ {
		from, to := cuts[i-1], cuts[i]
		if to <= from {
			continue
		}
		mid := (from + to) / 2
		st, ok := stateIn(knobs, n, mid, mid)
		out = append(out, Segment{From: from, To: to, State: st, Changing: !ok})
	}
	return out
}
