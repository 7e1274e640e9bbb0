package scenarios

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Explain writes the resolved scenario as a plan a reviewer can read:
// machine, topology, loads, the timeline with estimated start times, and
// what each assertion demands.
func (s *Scenario) Explain(w io.Writer) {
	fmt.Fprintf(w, "%s (%s)\n", s.Name, s.Path)
	if d := strings.TrimSpace(s.Description); d != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(d, "\n", "\n  "))
	}
	if len(s.Includes) > 0 {
		fmt.Fprintf(w, "includes: %s\n", strings.Join(s.Includes, ", "))
	}
	if s.Kernel.Min != "" {
		fmt.Fprintf(w, "kernels: %s or newer (older ones print SKIP: %s)\n", s.Kernel.Min, s.Kernel.Reason)
	}
	for _, c := range s.Chosen {
		param, v, _ := strings.Cut(c, "=")
		var kv []string
		for _, k := range sortedKeys(s.Presets[param][v]) {
			kv = append(kv, k+"="+s.Presets[param][v][k])
		}
		fmt.Fprintf(w, "preset %s: %s (choices: %s)\n", c, strings.Join(kv, " "), strings.Join(sortedKeys(s.Presets[param]), ", "))
	}
	fmt.Fprintf(w, "\nmachine: %d vCPUs, %d MiB", s.Machine.CPUs, s.Machine.MemoryMB)
	if len(s.Machine.Cmdline) > 0 {
		fmt.Fprintf(w, ", cmdline %q", strings.Join(s.Machine.Cmdline, " "))
	}
	for _, k := range sortedKeys(s.Machine.Sysctls) {
		fmt.Fprintf(w, ", %s=%s", k, s.Machine.Sysctls[k])
	}
	if s.Machine.Flavour != "" {
		fmt.Fprintf(w, ", %s flavour of every kernel", s.Machine.Flavour)
	}
	fmt.Fprintln(w)
	for _, name := range sortedKeys(s.Flavours) {
		f := s.Flavours[name]
		if f.Skip {
			fmt.Fprintf(w, "on the %s flavour: SKIP (%s)\n", name, f.Reason)
			continue
		}
		var kv []string
		for _, k := range sortedKeys(f.Params) {
			kv = append(kv, k+"="+f.Params[k])
		}
		fmt.Fprintf(w, "on the %s flavour: %s (%s)\n", name, strings.Join(kv, " "), f.Reason)
	}
	fmt.Fprintln(w, "topology:")
	for _, n := range s.Topology.NICs {
		fmt.Fprintf(w, "  nic %s: virtio-net, %d queue pairs, %s, host side %s, mac %s%s%s\n", n.Name, n.Queues,
			or(n.Address, "no address"), or(n.Host, "none"), n.MAC, gro(n.GRO), features(n.Features))
	}
	for _, n := range s.Topology.Netns {
		fmt.Fprintf(w, "  netns %s\n", n)
	}
	for _, v := range s.Topology.Veths {
		neigh := ""
		if v.StaticNeigh {
			neigh = ", permanent neighbour entries for each other"
		}
		fmt.Fprintf(w, "  veth %s <-> %s%s\n", end(v.End), end(v.Peer), neigh)
	}
	for _, r := range s.Topology.Routes {
		where := "netns " + or(r.Netns, "root")
		if r.Host {
			where = "host side"
		}
		fmt.Fprintf(w, "  route in %s: %s via %s\n", where, r.To, r.Via)
	}
	if len(s.Loads) > 0 {
		fmt.Fprintln(w, "loads:")
	}
	for _, name := range sortedKeys(s.Loads) {
		l := s.Loads[name]
		from := "netns " + or(l.From.Netns, "root")
		switch {
		case l.From.Host && l.Routed:
			from = "the host, routed through the guest"
		case l.From.Host:
			from = "the host through " + l.To.NIC + "'s tap"
		case l.Routed:
			from += ", routed"
		}
		rate := "flood"
		if l.Rate > 0 {
			rate = fmt.Sprintf("%d pkt/s", l.Rate)
		}
		if l.OpenLoop {
			rate += " open loop (sent on schedule, not after the answer)"
		}
		kind := l.Kind
		if l.Proto != "" {
			kind += "/" + l.Proto
		}
		fmt.Fprintf(w, "  %s: %s from %s to %s:%d (sink in netns %s), %d flows, %d-byte payloads, %s%s%s\n", name, kind, from,
			l.SinkAddr, l.To.Port, or(l.SinkNetns, "root"), l.Flows, l.Size, rate, pin(l), explainXSK(l))
	}
	explainInjects(w, s.Inject)
	fmt.Fprintf(w, "timeline (each action must finish within %v unless it says otherwise):\n", s.Defaults.Deadline.D())
	end := explainSteps(w, s.Timeline, 0, "  ")
	fmt.Fprintf(w, "  ~%v in all\n", end.Round(100*time.Millisecond))
	fmt.Fprintln(w, "asserts:")
	if !slices.ContainsFunc(s.Asserts, func(a *Assert) bool { return a.NoSplat != nil }) {
		fmt.Fprintln(w, "  - no kernel splat on the console (always, without no-splat: too)")
	}
	for _, a := range s.Asserts {
		fmt.Fprintf(w, "  - %s\n", explainAssert(a))
	}
	s.explainInvariants(w)
	explainPerf(w, s.Perf)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func gro(g *bool) string {
	if g == nil {
		return ""
	}
	if *g {
		return ", GRO on"
	}
	return ", GRO off"
}

func end(e End) string {
	return fmt.Sprintf("%s (netns %s, %s%s%s)", e.Name, or(e.Netns, "root"), or(e.Address, "no address"), gro(e.GRO), features(e.Features))
}

// features spells ethtool features the way ethtool -K takes them.
func features(f map[string]bool) string {
	if len(f) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(f) {
		parts = append(parts, k+" "+map[bool]string{true: "on", false: "off"}[f[k]])
	}
	return ", ethtool -K " + strings.Join(parts, " ")
}

func pin(l *Load) string {
	var parts []string
	if l.CPU != nil {
		parts = append(parts, fmt.Sprintf("sender on cpu %d", *l.CPU))
	}
	if l.SinkCPU != nil {
		parts = append(parts, fmt.Sprintf("sink on cpu %d", *l.SinkCPU))
	}
	if l.BusyPoll > 0 {
		parts = append(parts, fmt.Sprintf("sink busy-polls %dus", l.BusyPoll))
	}
	if w := schedWords(l.SinkPolicy, l.SinkPriority, l.SinkNice); len(w) > 0 {
		parts = append(parts, "sink "+strings.Join(w, " "))
	}
	if l.RcvBuf > 0 {
		parts = append(parts, fmt.Sprintf("sink SO_RCVBUF %d bytes", l.RcvBuf))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// explainSteps prints steps from time at and returns when they end.
func explainSteps(w io.Writer, steps []*Step, at time.Duration, indent string) time.Duration {
	for _, st := range steps {
		at += explainStep(w, st, at, indent)
	}
	return at
}

func explainStep(w io.Writer, st *Step, at time.Duration, indent string) time.Duration {
	label := ""
	if st.Name != "" {
		label = st.Name + ": "
	}
	if len(st.Parallel) > 0 {
		fmt.Fprintf(w, "%st=%-7s %sin parallel (line %d):\n", indent, secs(at), label, st.Pos.Line)
		var longest time.Duration
		for _, ch := range st.Parallel {
			longest = max(longest, explainStep(w, ch, at, indent+"  | "))
		}
		return longest
	}
	d, what := describe(st)
	loop := ""
	switch {
	case st.Every > 0 && st.For > 0:
		d = st.For.D()
		loop = fmt.Sprintf(" every %v for %v (~%d times)", st.Every.D(), st.For.D(), int(st.For.D()/st.Every.D())+1)
	case st.Every > 0 && st.Count > 0:
		d = time.Duration(st.Count-1) * st.Every.D()
		loop = fmt.Sprintf(" every %v, %d times", st.Every.D(), st.Count)
	}
	if st.Jitter > 0 {
		loop += fmt.Sprintf(" (+0..%v jitter)", st.Jitter.D())
	}
	if st.Deadline > 0 {
		loop += fmt.Sprintf(" [deadline %v]", st.Deadline.D())
	}
	fmt.Fprintf(w, "%st=%-7s %s%s%s (line %d)\n", indent, secs(at), label, what, loop, st.Pos.Line)
	return d
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// describe says what a step does and how long one run of it takes.
func describe(st *Step) (time.Duration, string) {
	if a := st.action(); a != nil {
		return a.explain()
	}
	return 0, "?"
}

func values(one string, many []string) string {
	if len(many) > 0 {
		return strings.Join(many, ", then ")
	}
	return one
}

func queuesOr(q []int) []int {
	if len(q) == 0 {
		return []int{0}
	}
	return q
}

func bounds(min, max *float64) string {
	var parts []string
	if min != nil {
		parts = append(parts, fmt.Sprintf(">= %g", *min))
	}
	if max != nil {
		parts = append(parts, fmt.Sprintf("<= %g", *max))
	}
	return strings.Join(parts, " and ")
}

func explainAssert(a *Assert) string {
	x, _ := a.kind()
	if x == nil {
		return "?"
	}
	label := ""
	if a.Name != "" {
		label = a.Name + ": "
	}
	return label + x.explain(a)
}

// span says over which part of the timeline a metric assertion is measured.
func span(a *Assert) string { return a.Span() }

// each marks the bounds of an each: assertion as holding per repetition.
func each(a *Assert) string {
	if a.Each != "" {
		return " every time"
	}
	return ""
}

// explainInjects lists the race-widening probes.
func explainInjects(w io.Writer, probes []*Inject) {
	if len(probes) == 0 {
		return
	}
	fmt.Fprintln(w, "inject (BPF kprobes that busy-wait in the guest; the code under test is unchanged):")
	for _, in := range probes {
		at := "at " + in.At
		if in.On == "return" {
			at = "on return from " + in.At
		}
		limit := "no limit"
		if in.Count > 0 {
			limit = fmt.Sprintf("at most %d times", in.Count)
		}
		armed := "armed from the start"
		if in.Armed != nil && !*in.Armed {
			armed = "disarmed until an inject step arms it"
		}
		prob := 1.0
		if in.Probability != nil {
			prob = *in.Probability
		}
		fmt.Fprintf(w, "  %s: spin %v %s, probability %g, %s, %s (line %d)\n", in.Name, in.Delay.D(), at, prob, limit, armed, in.Pos.Line)
	}
}

// Estimate is how long the timeline should take (sleeps and loops; actions
// count as instant), for scheduling the longest runs first.
func (s *Scenario) Estimate() time.Duration {
	return explainSteps(io.Discard, s.Timeline, 0, "")
}
