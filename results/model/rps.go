package model

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
)

// Context names of the rps rule's evidence, as a broken window lists them.
const (
	ctxRPSIPI  = "RPS IPI"
	ctxBacklog = "backlog packet"
)

// rpsKey is one RX queue's RPS setting.
type rpsKey struct {
	netns, dev string
	queue      int
}

// rpsState is what the RPS knobs left through a window: the union of every
// queue's mask, whether the masks are known, whether RFS may steer
// elsewhere, and whether every device feeding a backlog without NAPI has a
// mask (so that every backlog packet was steered).
type rpsState struct {
	union   uint64
	known   bool
	rfs     bool
	steered bool
	by      *results.Knob // the last RPS or RFS change
}

// rpsIn replays the RPS, RFS and netif-rx knobs over [from, to]. ok is false
// when one was under way in the window.
func rpsIn(knobs []results.Knob, from, to float64) (st rpsState, ok bool) {
	masks := map[rpsKey]uint64{}
	rfs := map[rpsKey]bool{}
	racy := map[rpsKey]bool{}               // the queue's last writes raced
	setters := map[rpsKey][]*results.Knob{} // each queue's RPS writes so far
	var feeders []rpsKey
	st.known, ok = true, true
	for i := range knobs {
		k := &knobs[i]
		if k.Start >= to {
			continue
		}
		key := rpsKey{k.Netns, k.Dev, 0}
		if k.Queue != nil {
			key.queue = *k.Queue
		}
		switch k.Kind {
		case results.KnobNetifRx:
			feeders = append(feeders, key)
			continue
		case results.KnobRPS:
			m, err := parseMask(k.Value)
			if err != nil || k.Failed {
				st.known = false
			}
			// Two writes under way at once leave the mask unknown until
			// the next: the kernel applied them in an order the host
			// cannot see.
			racy[key] = racing(setters[key], k, maskOf)
			setters[key] = append(setters[key], k)
			masks[key] = m
		case results.KnobRFS:
			rfs[key] = k.Failed || strings.TrimSpace(k.Value) != "0"
		default:
			continue
		}
		if k.Done > from {
			ok = false
		}
		st.by = k
	}
	for key, m := range masks {
		st.union |= m
		st.known = st.known && !racy[key]
	}
	for _, on := range rfs {
		st.rfs = st.rfs || on
	}
	st.steered = true
	for _, f := range feeders {
		if f.dev == "*" || masks[f] == 0 {
			st.steered = false
		}
	}
	return st, ok
}

// maskOf is the CPUs an rps_cpus value sets (0 when unreadable: a refused
// write leaves the mask unknown anyway).
func maskOf(v string) uint64 {
	m, _ := parseMask(v)
	return m
}

// parseMask reads an rps_cpus mask: hex, in 32-bit groups separated by
// commas ("00000000,00000002"); CPUs past 63 are not modelled.
func parseMask(v string) (uint64, error) {
	h := strings.ReplaceAll(strings.TrimSpace(v), ",", "")
	h = strings.TrimLeft(h, "0")
	if h == "" {
		return 0, nil
	}
	if len(h) > 16 {
		return 0, fmt.Errorf("mask %q: CPUs past 63", v)
	}
	return strconv.ParseUint(h, 16, 64)
}

// checkRPS judges the rps rule per window between two snapshots that read
// softnet_stat, once the masks were settled for the grace: no CPU outside
// the masks' union took an RPS IPI and, where every backlog feeder without
// NAPI has a mask, none polled backlog packets.
func checkRPS(r *Rule, knobs []results.Knob, snaps []Snapshot) Outcome {
	o := Outcome{Rule: r}
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		if a.IPIs == nil || b.IPIs == nil {
			continue // softnet_stat not read with who polled
		}
		from, to := a.From, b.To
		st, ok := rpsIn(knobs, from, to)
		if st.union == 0 && st.known {
			continue // RPS is off: the rule has nothing to judge
		}
		if !ok || !st.known || st.rfs {
			o.Unsure++
			continue
		}
		bad := map[string]map[int]uint64{}
		outside := func(ctx string, cpu int, n uint64) {
			if cpu < 0 || cpu >= 64 || st.union&(1<<cpu) != 0 || n == 0 {
				return
			}
			if bad[ctx] == nil {
				bad[ctx] = map[int]uint64{}
			}
			bad[ctx][cpu] += n
		}
		for cpu, n := range b.IPIs {
			if p := a.IPIs[cpu]; n > p {
				outside(ctxRPSIPI, cpu, n-p)
			}
		}
		if st.steered {
			for n, d := range work(a.Lines, b.Lines) {
				if n.Name != "backlog" {
					continue
				}
				for cpu, pk := range d.cpus {
					outside(ctxBacklog, cpu, pk)
				}
			}
		}
		after := -1.0
		if st.by != nil {
			after = from - st.by.Done
		}
		if len(bad) > 0 && after >= 0 {
			o.Lags = append(o.Lags, to-st.by.Done)
		}
		if after >= 0 && after < r.Grace {
			if len(bad) > 0 {
				o.Settling++
				o.Settle = max(o.Settle, to-st.by.Done)
			}
			continue
		}
		o.Judged++
		if len(bad) > 0 {
			o.Broken = append(o.Broken, Window{From: from, To: to, State: State{By: st.by}, Polls: bad, After: after,
				Mask: st.union})
		}
	}
	return o
}

// maskWords names a mask's CPUs: "rps_cpus 1,3".
func maskWords(m uint64) string {
	var cpus []string
	for m != 0 {
		c := bits.TrailingZeros64(m)
		cpus = append(cpus, strconv.Itoa(c))
		m &^= 1 << c
	}
	return "rps_cpus " + strings.Join(cpus, ",")
}

// describeRPS says what a broken window saw: "2 RPS IPI on cpu0, 14 backlog
// packet on cpu0 outside rps_cpus 1 in 3.21-3.43s, 2.10s after ...".
func (w Window) describeRPS() string {
	var parts []string
	for _, ctx := range slices.Sorted(maps.Keys(w.Polls)) {
		for _, cpu := range slices.Sorted(maps.Keys(w.Polls[ctx])) {
			parts = append(parts, fmt.Sprintf("%d %s on cpu%d", w.Polls[ctx][cpu], ctx, cpu))
		}
	}
	s := fmt.Sprintf("%s outside %s in %.2f-%.2fs", strings.Join(parts, ", "), maskWords(w.Mask), w.From, w.To)
	if w.After >= 0 {
		s += fmt.Sprintf(", %.2fs after %s", w.After, w.State.describe())
	}
	return s
}

// receivedRPS reads softnet_stat's received_rps per CPU (nil when it does
// not parse); a row's cpu column, where printed (6.1 on), names its CPU.
func receivedRPS(text string) map[int]uint64 {
	s, err := metrics.ParseSource(wire.SourceSoftnet, text)
	if err != nil {
		return nil
	}
	out := map[int]uint64{}
	for i, v := range s["received_rps"] {
		cpu := i
		if ids := s["cpu"]; i < len(ids) {
			cpu = int(ids[i])
		}
		out[cpu] = uint64(v)
	}
	return out
}
