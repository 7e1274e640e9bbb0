package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
)

// Rule is one invariant: the poll contexts that must not poll a NAPI in a
// state, once a change has had Grace seconds to take effect.
type Rule struct {
	Name string
	// Doc says what the rule checks and the kernel code it rests on
	// (net/core/dev.c of 6.1.192; 6.12.117's line in brackets).
	Doc string
	// Grace is how long the old context may go on polling after the change
	// that set the state returned (see Rules).
	Grace     float64
	applies   func(State) bool
	state     string   // the state applies holds in, in words
	forbidden []string // contexts as the agent reports them
	// reaches, when set, is a context that must poll some NAPI of the
	// device in every settled phase where applies holds and its NAPIs
	// polled packets (reach.go), instead of forbidden contexts per window.
	reaches string
	// kthreads, when set, makes the rule judge the device's napi/ kthreads
	// in every thread list (kthreads.go): there must be none.
	kthreads bool
	// rps, when set, makes the rule judge where RPS steered packets
	// (rps.go) instead of who polled a NAPI.
	rps bool
	// live, when set, makes the rule judge a device's silences while a
	// load sends to it (live.go): none may last longer than Within.
	live   bool
	Within float64
	// conserve, when set, makes the rule judge each sink namespace's
	// account of its udp loads (conserve.go): no more than Slack
	// datagrams may vanish.
	conserve bool
	Slack    int64
	// kernel, when set, says on which releases the rule holds; releases
	// says it in words.
	kernel   func(Kernel) bool
	releases string
}

// Rules are the invariants every run is checked against. Their graces come
// from the settle times measured under TCG (docs/invariants.md).
var Rules = []*Rule{
	{
		Name: "threaded-not-softirq",
		Doc: "A NAPI in threaded mode is polled by its own kthread (or a busy-poller), never by the NET_RX " +
			"softirq or ksoftirqd: ____napi_schedule wakes napi->thread when NAPI_STATE_THREADED is set and " +
			"only otherwise adds the NAPI to the softirq's poll list (dev.c:4497 [4697]); dev_set_threaded " +
			"notes that a NAPI being polled switches at its next napi_schedule (dev.c:6495), so a NAPI kept busy " +
			"in net_rx_action's repoll list (__napi_poll's *repoll, dev.c:6699 [7014]) stays there until it completes.",
		Grace:     0.4,
		applies:   func(s State) bool { return !s.Down && (s.Mode == ModeThreaded || s.Mode == ModeBusyPoll) },
		state:     "in threaded mode",
		forbidden: []string{"softirq", "ksoftirqd"},
	},
	{
		Name: "softirq-not-kthread",
		Doc: "A NAPI in softirq mode is never polled by a napi/ kthread: the kthread polls only after " +
			"____napi_schedule set NAPI_STATE_SCHED_THREADED or woke it (napi_thread_wait, dev.c:6724 [7039]), " +
			"which it does only for a NAPI with NAPI_STATE_THREADED; a kthread that was polling finishes its " +
			"repoll loop first (napi_threaded_poll, dev.c:6752 [7102]).",
		Grace:     0.4,
		applies:   func(s State) bool { return !s.Down && s.Mode == ModeSoftirq },
		state:     "in softirq mode",
		forbidden: []string{"kthread"},
	},
	{
		Name: "down-not-polled",
		Doc: "A NAPI of a device that is down is not polled by anyone: the driver's ndo_stop calls " +
			"napi_disable, which returns only once it owns NAPI_STATE_SCHED (dev.c:6551 [6868]); until " +
			"napi_enable, napi_schedule_prep refuses (NAPIF_STATE_DISABLE, dev.c:6142 [6377]) and so does " +
			"busy polling (napi_busy_loop, dev.c:6359 [6613]).",
		Grace:     0.05,
		applies:   func(s State) bool { return s.Down },
		state:     "of a device that is down",
		forbidden: []string{"softirq", "ksoftirqd", "kthread", "busypoll"},
	},
	{
		Name: "busy-poll-reaches",
		Doc: "A receiver busy polling (SO_BUSY_POLL) on a device whose NAPIs deliver packets polls one of them " +
			"from its own task in every phase, threaded or not: sk_busy_loop (include/net/busy_poll.h) runs " +
			"napi_busy_loop on the socket's napi_id whenever its queue is empty, which takes NAPI_STATE_SCHED " +
			"from an idle NAPI whatever its mode (dev.c:6359 [6613]; \"net: fix race between napi kthread mode " +
			"and busy poll\", 5.12, made the kthread yield it through SCHED_THREADED). Not in threaded busy-poll " +
			"mode, whose kthread keeps SCHED; a phase is judged on the record, not per window: under a flood " +
			"the receiver may never find its queue empty for 200 ms. Not after the device's NAPIs may have been " +
			"added anew (a link change: veth deletes its NAPIs on close; GRO or XDP) until the receiver starts " +
			"again: an unconnected UDP socket learns its NAPI id once (sk_mark_napi_id_once in " +
			"__udp_queue_rcv_skb, udp.c), and napi_busy_loop finds nothing under an id that is gone. Nor in a window " +
			"where NET_RX was left to ksoftirqd and no busy poll came: the NAPIs stay on its poll list, and " +
			"napi_busy_loop leaves a scheduled NAPI alone.",
		Grace: 0.2,
		applies: func(s State) bool {
			return !s.Down && s.Busy && !s.Stale && (s.Mode == ModeSoftirq || s.Mode == ModeThreaded)
		},
		state:   "while a busy-polling receiver runs and the device's NAPIs poll packets",
		reaches: "busypoll",
	},
	{
		Name: "softirq-no-kthread",
		Doc: "From 6.17 a device set to softirq mode keeps no napi/ kthreads: netif_set_threaded(dev, " +
			"DISABLED) calls napi_stop_kthread on every NAPI, which waits until the kthread gives the NAPI up " +
			"and kthread_stop()s it (689883de94dd, \"net: stop napi kthreads when THREADED napi is disabled\"; " +
			"7.3.4 dev.c:7255). Before 6.17 the kthread stays until the NAPI is deleted, so the rule does not " +
			"apply there. Judged per device, on the napi/ threads read with the who-polled snapshots.",
		Grace:    0.4,
		applies:  func(s State) bool { return s.Mode == ModeSoftirq },
		state:    "of a device in softirq mode",
		kthreads: true,
		kernel:   Kernel.stopsKthreads,
		releases: "6.17 and later",
	},
	{
		Name: "rps-in-mask",
		Doc: "With RPS masks set and RFS off, packets are steered only to the masks' CPUs: get_rps_cpu picks " +
			"map->cpus[reciprocal_scale(hash, map->len)] of the receiving queue's rps_map (dev.c:4671 [4869]), " +
			"an unmasked queue gets -1 and stays on the CPU it arrived on (netif_rx_internal, dev.c:5090 [5371]), " +
			"and only a remote enqueue_to_backlog sends the RPS IPI that softnet_stat counts as received_rps " +
			"(rps_trigger_softirq, dev.c:4728 [4926]). So no CPU outside the union of the masks takes an RPS IPI; " +
			"and where every device that hands packets to a backlog without NAPI (netif_rx: veth without GRO or " +
			"XDP, lo) has a mask, no CPU outside it polls backlog packets. RFS (rps_flow_cnt, " +
			"rps_sock_flow_entries) steers to the application's CPU instead: not judged then.",
		Grace: 0.4,
		state: "while RPS masks are set and RFS is off",
		rps:   true,
	},
	{
		Name: "rx-live",
		Doc: "A device that is up keeps polling what a load sends it: the driver schedules its NAPI for " +
			"every packet it is handed while the NAPI is not already scheduled (veth_xmit's __veth_xdp_flush, " +
			"virtio-net's skb_recv_done), a NAPI that used its whole budget is polled again (net_rx_action's " +
			"repoll list, ksoftirqd past its time or budget, dev.c:6783 [7101]; napi_threaded_poll's loop), and one " +
			"that completes looks again before it sleeps (veth_poll's ptr_ring check after napi_complete_done, " +
			"virtqueue_napi_complete's virtqueue_poll). So while a load's sender keeps sending to a device that " +
			"is up, settled and was polling, no stretch longer than the bound passes without one of its RX NAPIs " +
			"polling a packet. A link, GRO, XDP or channels change ends a silence and starts a phase (the NAPIs " +
			"may be disabled or deleted); a threaded flip changes who polls, not whether, and does not. Judged " +
			"per device, not per NAPI (a flow's queue may move), only while the guest kept reading its " +
			"who-polled snapshots. A load routed through a forwarding namespace is not judged: a change on its way " +
			"silences it too.",
		Grace:  0.4,
		Within: 1.0,
		state:  "while a load sends to a device that is up, settled and polling",
		live:   true,
	},
	{
		Name: "udp-conserved",
		Doc: "What a namespace's udp loads sent is received by their sinks or counted as dropped on the way: " +
			"the kernel counts every datagram it drops there, in the sender's qdisc or veth (veth_xmit's " +
			"priv->dropped, veth.c:352 [407]), waiting for a neighbour (unres_discards, neighbour.c:1237 [1239]), in a " +
			"full backlog (enqueue_to_backlog's sd->dropped, dev.c:4842 [5081]), in the driver (virtio-net's and " +
			"veth's per-queue drops, ethtool -S), in IP (Ip InDiscards, InHdrErrors, InAddrErrors) and in UDP " +
			"(a full socket: RcvbufErrors within InErrors, udp.c:2161 [2143]; no socket: NoPorts, udp.c:2545 [2532]), and a " +
			"NAPI hands on all it polled: napi_complete_done flushes GRO and the listified batch " +
			"(gro_normal_list, dev.c:6213 [6448]). Judged per sink namespace over the counters read before and " +
			"after the timeline (the sinks read their sockets empty before they close), where no link, GRO, " +
			"XDP or channels change, exec or kselftest step ran on the way while the loads sent: a veth that " +
			"goes down or loses its NAPI frees its ring without counting (veth_napi_del's ptr_ring_cleanup). A " +
			"load routed through a forwarding namespace is not judged: that namespace's drops are not read.",
		state:    "for every namespace udp loads end in",
		conserve: true,
	},
}

// RuleNamed returns the invariant called name, or nil.
func RuleNamed(name string) *Rule {
	for _, r := range Rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Names lists the invariants' names.
func Names() []string {
	var out []string
	for _, r := range Rules {
		out = append(out, r.Name)
	}
	return out
}

// Snapshot is one read of the napi_polls source: its lines, and when the
// guest read it (host seconds since the timeline began: From the read's
// start, To its end).
type Snapshot struct {
	From, To float64
	Lines    []metrics.PollLine
	// Threads are the napi/ kthreads read with it ("pid comm"; nil: not
	// read).
	Threads []string
	// IPIs are the RPS IPIs each CPU took so far (softnet_stat's
	// received_rps; nil: not read).
	IPIs map[int]uint64
}

// Window is a NAPI between two snapshots, in the state the knobs left it,
// with the polls a forbidden context made there (by context, then CPU).
type Window struct {
	NAPI     NAPI
	From, To float64
	State    State
	Polls    map[string]map[int]uint64
	After    float64 // seconds from the change that set State to From (-1: no change)
	// A rule with reaches judges a device's phase (NAPI names the device
	// only): the windows it spans, the packets its NAPIs polled there,
	// and the context that never polled them.
	Windows int
	Packets uint64
	Missing string
	// Threads are the napi/ kthreads a rule with kthreads saw ("pid comm").
	Threads []string
	// Mask is the RPS masks' union a window of the rps rule broke.
	Mask uint64
	// Sent is what loads sent to the device through a silence of the
	// liveness rule, from SentFrom on.
	Sent     uint64
	SentFrom float64
	// Tally is a namespace's account that broke the conservation rule
	// (NAPI.Dev names the namespace).
	Tally *Tally
}

// Outcome is what a rule found in a run.
type Outcome struct {
	Rule     *Rule
	Judged   int      // windows of a NAPI settled in the rule's state
	NAPIs    int      // NAPIs judged
	Unsure   int      // windows in the state with a change under way
	Broken   []Window // windows where a forbidden context polled past the grace
	Settling int      // windows within the grace where a forbidden context still polled
	Settle   float64  // the longest of those: seconds from the change to the window's end
	// Lags are, for every window where a forbidden context polled after a
	// change, the seconds from the change to the window's end, settling or
	// not: the noise the graces are chosen from. For a rule with reaches,
	// the seconds from the change that began each phase to the end of the
	// first window its context polled in.
	Lags []float64
	// Phases are the device phases a rule with reaches judged (Judged
	// and NAPIs then count windows and devices).
	Phases int
	// Overloaded are the windows a rule with reaches left out: ksoftirqd
	// polled the device's NAPIs there (see checkReach).
	Overloaded int
	// Short are the phases of a single settled window that a rule with
	// reaches left out (see checkReach).
	Short int
	// Tallies are the accounts of every namespace the conservation rule
	// judged: what vanished in them is its noise.
	Tallies []Tally
}

// Record is what a run recorded that the rules read.
type Record struct {
	Kernel Kernel
	Knobs  []results.Knob
	Snaps  []Snapshot
	Loads  []results.Load
	// Totals are the counters read before and after the timeline.
	Totals Totals
}

// Check replays the record's knobs over its snapshots and returns an
// outcome for every rule whose state the run reached (a rule never
// exercised is left out).
func Check(rec Record, rules []*Rule) []Outcome {
	knobs, snaps, loads := rec.Knobs, named(rec.Snaps), rec.Loads
	rules = slices.DeleteFunc(slices.Clone(rules), func(r *Rule) bool { return r.kernel != nil && !r.kernel(rec.Kernel) })
	outs := make([]Outcome, len(rules))
	judged := make([]map[NAPI]bool, len(rules))
	for i, r := range rules {
		outs[i].Rule, judged[i] = r, map[NAPI]bool{}
		switch {
		case r.reaches != "":
			outs[i] = checkReach(r, knobs, snaps)
		case r.kthreads:
			outs[i] = checkKthreads(r, knobs, snaps)
		case r.rps:
			outs[i] = checkRPS(r, knobs, snaps)
		case r.live:
			outs[i] = checkLive(r, knobs, snaps, loads)
		case r.conserve:
			outs[i] = checkConserve(r, knobs, loads, rec.Totals)
		}
	}
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		from, to := a.From, b.To
		for n, d := range work(a.Lines, b.Lines) {
			st, ok := stateIn(knobs, n, from, to)
			for ri, r := range rules {
				o := &outs[ri]
				if r.reaches != "" || r.kthreads || r.rps || r.live || r.conserve || !r.applies(st) {
					continue
				}
				if !ok {
					o.Unsure++
					continue
				}
				o.Judged++
				judged[ri][n] = true
				bad := forbiddenPolls(r, d)
				if len(bad) == 0 {
					continue
				}
				w := Window{NAPI: n, From: from, To: to, State: st, Polls: bad, After: -1}
				if st.By != nil {
					w.After = from - st.By.Done
					o.Lags = append(o.Lags, to-st.By.Done)
				}
				if w.After >= 0 && w.After < r.Grace {
					o.Settling++
					o.Settle = max(o.Settle, to-st.By.Done)
					continue
				}
				o.Broken = append(o.Broken, w)
			}
		}
	}
	var out []Outcome
	for i, o := range outs {
		o.NAPIs += len(judged[i])
		if o.Judged+o.Unsure > 0 {
			out = append(out, o)
		}
	}
	return out
}

// forbiddenPolls returns the polls r forbids in d, by context and CPU.
func forbiddenPolls(r *Rule, d *delta) map[string]map[int]uint64 {
	var bad map[string]map[int]uint64
	for _, ctx := range r.forbidden {
		if len(d.polls[ctx]) == 0 {
			continue
		}
		if bad == nil {
			bad = map[string]map[int]uint64{}
		}
		bad[ctx] = maps.Clone(d.polls[ctx])
	}
	return bad
}

// Unit says what Judged counts: windows, phases (Phases of them judged)
// or thread lists.
func (o Outcome) Unit() string {
	switch {
	case o.Rule.reaches != "":
		return "phases"
	case o.Rule.kthreads:
		return "thread lists"
	case o.Rule.conserve:
		return "namespaces"
	}
	return "windows"
}

// Assert is the outcome as a run's results record it (Kind invariant): it
// fails on a broken window; a rule exercised but never settled for a whole
// window is not measured, which passes (the run asked for nothing).
func (o Outcome) Assert() results.Assert {
	r := o.Rule
	a := results.Assert{Name: r.Name, Kind: results.KindInvariant, Passed: len(o.Broken) == 0, Bound: r.Bound()}
	switch {
	case r.conserve && o.Judged == 0:
		a.Unmeasured = true
		a.Measured = fmt.Sprintf("not measured: %d namespaces, each with a change on the way while its loads sent or a counter not read", o.Unsure)
	case len(o.Broken) > 0 && r.conserve:
		a.Measured = fmt.Sprintf("%d of %d namespaces lost datagrams no counter counted", len(o.Broken), o.Judged)
	case r.conserve:
		a.Measured = fmt.Sprintf("held in %d namespaces, at most %d datagrams unaccounted", o.Judged, o.maxVanished())
	case o.Judged == 0 && o.Short > 0:
		a.Unmeasured = true
		a.Measured = fmt.Sprintf("not measured: %s of one window, too short to judge", phases(o.Short))
	case o.Judged == 0 && o.Overloaded > 0:
		a.Unmeasured = true
		a.Measured = fmt.Sprintf("not measured: %d windows overloaded (ksoftirqd polled), %d with a change under way", o.Overloaded, o.Unsure)
	case o.Judged == 0:
		a.Unmeasured = true
		a.Measured = fmt.Sprintf("not measured: %d windows in that state, each with a change under way", o.Unsure)
	case len(o.Broken) > 0 && r.kthreads:
		a.Measured = fmt.Sprintf("%d of %d thread lists of %d devices broke it", len(o.Broken), o.Judged, o.NAPIs)
	case r.kthreads:
		a.Measured = fmt.Sprintf("held in %d thread lists of %d devices", o.Judged, o.NAPIs)
	case len(o.Broken) > 0 && r.rps:
		a.Measured = fmt.Sprintf("%d of %d windows broke it", len(o.Broken), o.Judged)
	case r.rps:
		a.Measured = fmt.Sprintf("held in %d windows", o.Judged)
	case len(o.Broken) > 0 && r.live:
		a.Measured = fmt.Sprintf("%d of %d devices fell silent past the bound (%d times) in %d windows", brokenDevices(o.Broken), o.NAPIs, len(o.Broken), o.Judged)
	case r.live:
		a.Measured = fmt.Sprintf("held in %d windows of %d devices", o.Judged, o.NAPIs)
		if len(o.Lags) > 0 {
			a.Measured += fmt.Sprintf(", the longest silence %.2fs", slices.Max(o.Lags))
		}
	case len(o.Broken) > 0 && r.reaches != "":
		a.Measured = fmt.Sprintf("%d of %d phases of %d devices broke it", len(o.Broken), o.Phases, o.NAPIs)
	case len(o.Broken) > 0:
		a.Measured = fmt.Sprintf("%d of %d windows of %d NAPIs broke it", len(o.Broken), o.Judged, o.NAPIs)
	case r.reaches != "":
		a.Measured = fmt.Sprintf("held in %d phases (%d windows) of %d devices", o.Phases, o.Judged, o.NAPIs)
		if o.Overloaded > 0 {
			a.Measured += fmt.Sprintf("; %d windows overloaded (ksoftirqd polled) not judged", o.Overloaded)
		}
		if o.Short > 0 {
			a.Measured += fmt.Sprintf("; %s of one window not judged", phases(o.Short))
		}
	default:
		a.Measured = fmt.Sprintf("held in %d windows of %d NAPIs", o.Judged, o.NAPIs)
	}
	if len(o.Broken) > 0 {
		a.Detail = o.Broken[0].describe()
		for _, w := range o.Broken {
			a.Spans = append(a.Spans, [2]float64{w.From, w.To})
		}
	}
	if o.Settling > 0 && r.reaches == "" {
		a.Measured += fmt.Sprintf("; %d windows settling, the last %.2fs after a change", o.Settling, o.Settle)
	}
	return a
}

// Bound says what the rule allows: "no softirq, ksoftirqd poll of a NAPI in
// threaded mode (from 0.50s after the change)".
func (r *Rule) Bound() string {
	switch {
	case r.reaches != "":
		return fmt.Sprintf("%s polls of a device's NAPIs in every phase %s%s", r.reaches, r.state, graceWords(r.Grace))
	case r.kthreads:
		return fmt.Sprintf("no napi/ kthread %s, on %s%s", r.state, r.releases, graceWords(r.Grace))
	case r.live:
		return fmt.Sprintf("no silence of a device's RX NAPIs longer than %.2fs while a load sends to it, up, settled and polling%s",
			r.Within, graceWords(r.Grace))
	case r.conserve:
		return fmt.Sprintf("a namespace's udp datagrams are received or counted as dropped, at most %d vanish (judged where nothing on their way changed while they were sent)", r.Slack)
	case r.rps:
		return fmt.Sprintf("no RPS IPI (nor, where every backlog feeder is masked, backlog packet) on a CPU outside the masks %s%s",
			r.state, graceWords(r.Grace))
	}
	return fmt.Sprintf("no %s poll of a NAPI %s%s", strings.Join(r.forbidden, ", "), r.state, graceWords(r.Grace))
}

func graceWords(g float64) string {
	if g == 0 {
		return ""
	}
	return fmt.Sprintf(" (from %.2fs after the change)", g)
}

// describe says what a broken window saw: "eth0/rx-0: 12 softirq polls
// (cpu0 9, cpu1 3) in 3.21-3.43s, 0.52s after step ... set threaded=1 at 2.69s".
func (w Window) describe() string {
	switch {
	case w.Missing != "":
		return w.describeReach()
	case w.Threads != nil:
		return w.describeThreads()
	case w.Mask != 0:
		return w.describeRPS()
	case w.Sent > 0:
		return w.describeLive()
	case w.Tally != nil:
		return w.Tally.Describe()
	}
	var parts []string
	for _, ctx := range slices.Sorted(maps.Keys(w.Polls)) {
		var total uint64
		var cpus []string
		for _, cpu := range slices.Sorted(maps.Keys(w.Polls[ctx])) {
			total += w.Polls[ctx][cpu]
			cpus = append(cpus, fmt.Sprintf("cpu%d %d", cpu, w.Polls[ctx][cpu]))
		}
		parts = append(parts, fmt.Sprintf("%d %s polls (%s)", total, ctx, strings.Join(cpus, ", ")))
	}
	when := fmt.Sprintf("in %.2f-%.2fs", w.From, w.To)
	if w.After >= 0 {
		when += fmt.Sprintf(", %.2fs after %s", w.After, w.State.describe())
	}
	return fmt.Sprintf("%s: %s %s", w.NAPI, strings.Join(parts, ", "), when)
}

// Reads returns a run's napi_polls snapshots (samples.jsonl, or the
// runner's record of it) placed where the guest read them, in order; a
// snapshot whose source did not parse is left out.
func Reads(samples []results.SampleLine) []Snapshot {
	c := results.NewGuestClock(len(samples), func(i int) (float64, float64, float64) {
		return samples[i].Host, samples[i].Sample.T, samples[i].Sample.Took
	})
	var out []Snapshot
	for _, s := range samples {
		v, ok := s.Sample.Values[metrics.SourceNAPIPolls]
		if !ok {
			continue
		}
		lines, err := metrics.ParsePolls(v)
		if err != nil {
			continue
		}
		from := c.At(s.Host, s.Sample.T)
		snap := Snapshot{From: from, To: from + s.Sample.Took, Lines: lines}
		if t, ok := s.Sample.Values[wire.SourceSoftnet]; ok {
			snap.IPIs = receivedRPS(t)
		}
		if t, ok := s.Sample.Values[metrics.SourceNAPIThreads]; ok {
			snap.Threads = []string{}
			for _, l := range strings.Split(t, "\n") {
				if f := strings.Fields(l); len(f) == 2 {
					snap.Threads = append(snap.Threads, f[1]+" (pid "+f[0]+")")
				}
			}
		}
		out = append(out, snap)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return cmp.Compare(a.From, b.From) })
	return out
}

// phases counts phases: "1 phase", "2 phases".
func phases(n int) string {
	if n == 1 {
		return "1 phase"
	}
	return fmt.Sprintf("%d phases", n)
}
