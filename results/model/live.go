package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"napilab/results"
)

// Liveness: a device's NAPIs that were polling what a load sends them may
// not go without polling a packet for longer than Rule.Within while the
// load's sender keeps sending, the device is up, nothing changes on it and
// the guest keeps running. Judged per device (the RX NAPIs of its name),
// not per NAPI: which queue a flow lands on may move (a TCP flow's queue
// follows the CPU the guest answers from), a device's packets may not.

// liveCadence is the longest pause between two who-polled snapshots that
// still shows the guest ran through a silence: a guest the host did not
// run stops its snapshots as well as its NAPIs (its own senders too, but
// not the host's).
const liveCadence = 0.6

// liveKnob says a knob kind may stop a device's NAPIs from polling, so
// that a silence ends and a new phase begins where it is issued: the link
// (down disables them), GRO and XDP (veth deletes and adds them) and the
// channels (queues stop and start); an exec or kselftest step, on any
// device, for as long as it runs. A threaded flip or a busy-polling
// receiver changes who polls, not whether: a silence runs through them.
func liveKnob(kind string) bool {
	switch kind {
	case results.KnobLink, results.KnobNAPIs, results.KnobChannels, results.KnobUnknown:
		return true
	}
	return false
}

// rxNAPI says a NAPI receives: not virtio-net's TX NAPIs (tx@<address>,
// or tx-<n> once they return), whose polls reap what was sent.
func rxNAPI(name string) bool { return !strings.HasPrefix(name, "tx") }

// silence is a stretch in which no RX NAPI of dev polled a packet.
type silence struct {
	from, to float64 // certainly silent: between two snapshots' reads
	sent     uint64  // what the loads' senders sent to dev in it
	first    float64 // the start of the first 100 ms in it a sender sent in
	paused   bool    // the guest's snapshots paused longer than liveCadence
}

// pending is how long the first packet sent in the silence waited in it at
// least: a silence that began before the senders sent (they paused too)
// counts from their first packet.
func (s silence) pending() float64 { return s.to - s.first }

// checkLive judges the rule with live on every device a load sends to.
func checkLive(r *Rule, knobs []results.Knob, snaps []Snapshot, loads []results.Load) Outcome {
	o := Outcome{Rule: r}
	feeds := map[string][]results.Load{}
	netns := map[string]string{}
	for _, l := range loads {
		if l.Dev == "" || len(l.Sending) == 0 || l.Routed {
			continue // routed: a change on the way may silence it
		}
		if ns, ok := netns[l.Dev]; ok && ns != l.Netns {
			netns[l.Dev] = "\x00" // two devices of one name: polls do not say which
			continue
		}
		netns[l.Dev] = l.Netns
		feeds[l.Dev] = append(feeds[l.Dev], l)
	}
	for _, dev := range slices.Sorted(maps.Keys(feeds)) {
		fs := feeds[dev]
		if netns[dev] == "\x00" {
			continue
		}
		before := o.Judged
		for _, s := range silences(r, dev, knobs, snaps, fs, &o) {
			if s.sent == 0 {
				continue
			}
			if s.paused {
				o.Unsure++
				continue
			}
			o.Lags = append(o.Lags, s.pending())
			if s.pending() > r.Within {
				w := Window{NAPI: NAPI{Dev: dev}, From: s.from, To: s.to, Sent: s.sent, SentFrom: s.first, After: -1}
				if _, k := lastKnob(knobs, dev, s.from, liveKnob); k != nil {
					w.After, w.State.By = s.from-k.Done, k
				}
				o.Broken = append(o.Broken, w)
			}
		}
		if o.Judged > before {
			o.NAPIs++ // devices, for this rule
		}
	}
	return o
}

// silences walks dev's phases window by window. A phase begins when a
// change on dev is issued and is judged from Grace after it returned, with
// the link up; it is active from the first window its RX NAPIs polled a
// packet in. Every run of active windows without a packet polled is a
// silence: certain from the end of the read before it to the start of the
// read after it (or the last read before the next change). Judged counts
// the active windows in which a sender sent to dev.
func silences(r *Rule, dev string, knobs []results.Knob, snaps []Snapshot, feeds []results.Load, o *Outcome) []silence {
	var out []silence
	active, quiet := false, -1 // quiet: the read the current silence began after (-1: none)
	// end closes the current silence at read m.
	end := func(m int) {
		if quiet >= 0 && m > quiet {
			s := silence{from: snaps[quiet].To, to: snaps[m].From}
			for k := quiet + 1; k <= m; k++ {
				s.paused = s.paused || snaps[k].From-snaps[k-1].To > liveCadence
			}
			// Not the first 100 ms: packets sent as the read that opened the
			// silence was taken (the clocks agree within a few ms, a read
			// takes a few) were polled before it, by a sender that stopped.
			s.sent, s.first = sentIn(feeds, s.from, s.to, 0.1)
			out = append(out, s)
		}
		quiet = -1
	}
	var phase *results.Knob
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		if _, k := lastKnob(knobs, dev, b.To, liveKnob); k != phase {
			end(i - 1) // a change was issued after read i-1 began
			phase, active = k, false
		}
		if changing(knobs, dev, a.From, b.To, r.Grace) || down(knobs, dev, b.To) {
			continue // a change under way or settling, or the link down
		}
		var packets uint64
		for n, d := range work(a.Lines, b.Lines) {
			if n.Dev == dev && rxNAPI(n.Name) {
				packets += d.packets
			}
		}
		switch {
		case packets > 0:
			end(i - 1)
			active = true
		case active && quiet < 0:
			quiet = i - 1
		}
		if sent, _ := sentIn(feeds, a.From, b.To, 0); active && sent > 0 {
			o.Judged++
		}
	}
	end(len(snaps) - 1)
	return out
}

// changing says a change on dev (or on every device) was under way in
// [from, to], or returned less than grace before from: the last one issued
// need not be the last to return (an exec step runs on through a link flip).
func changing(knobs []results.Knob, dev string, from, to, grace float64) bool {
	for _, k := range knobs {
		if (k.Dev == dev || k.Dev == "*") && liveKnob(k.Kind) && k.Start < to && k.Done+grace > from {
			return true
		}
	}
	return false
}

// down says dev's link was last set down (or a link change failed) before t.
func down(knobs []results.Knob, dev string, t float64) bool {
	d := false
	for _, k := range knobs {
		if k.Dev == dev && k.Kind == results.KnobLink && k.Start < t {
			d = k.Value == "down" || k.Failed
		}
	}
	return d
}

// sentIn sums what the feeds' senders sent in the buckets wholly inside
// [from+skip, to] and returns the start of the first that holds a packet
// (to: none does).
func sentIn(feeds []results.Load, from, to, skip float64) (n uint64, first float64) {
	const w = 0.1 // wire.BucketWidthMs
	first = to
	for _, l := range feeds {
		for b, v := range l.Sending {
			if start := l.SendingFrom + float64(b)*w; start >= from+skip && start+w <= to && v > 0 {
				n += v
				first = min(first, start)
			}
		}
	}
	return n, first
}

// describeLive says what a broken silence saw.
func (w Window) describeLive() string {
	s := fmt.Sprintf("%s: what its loads sent from %.2fs waited unpolled to %.2fs at least (%.2fs; no RX NAPI polled "+
		"a packet from %.2fs; %d packets sent meanwhile)", w.NAPI.Dev, w.SentFrom, w.To, w.To-w.SentFrom, w.From, w.Sent)
	if w.After >= 0 {
		s += fmt.Sprintf(", %.2fs after %s", w.After, w.State.describe())
	}
	return s
}

// brokenDevices counts the devices among broken windows.
func brokenDevices(ws []Window) int {
	devs := map[string]bool{}
	for _, w := range ws {
		devs[w.NAPI.Dev] = true
	}
	return len(devs)
}
