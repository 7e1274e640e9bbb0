package scenarios

import (
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"napilab/results"
	"napilab/results/model"
)

// Invariants are the scenario's exceptions to the rules every run is
// checked against (results/model).
type Invariants struct {
	// Off maps an invariant's name to why it does not hold here; the
	// reason is shown in every report.
	Off map[string]string `yaml:"off"`
	// Require lists invariants the scenario is written to exercise: one the
	// run could not judge (never settled in its state, no snapshots) makes
	// the run ERROR instead of passing as "not judged".
	Require []string `yaml:"require"`

	pos Pos
}

// UnmarshalYAML records the line.
func (iv *Invariants) UnmarshalYAML(n *yaml.Node) error {
	type raw Invariants
	iv.pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(iv))
}

func (k *checker) invariants() {
	p := k.s.Invariants.pos
	if p.Line == 0 {
		p = k.top
	}
	for _, name := range sortedKeys(k.s.Invariants.Off) {
		if model.RuleNamed(name) == nil {
			k.c.add(p, "invariants.off: unknown invariant %q (known: %s)", name, strings.Join(model.Names(), ", "))
		}
		if strings.TrimSpace(k.s.Invariants.Off[name]) == "" {
			k.c.add(p, "invariants.off: %s needs a reason", name)
		}
	}
	for _, name := range k.s.Invariants.Require {
		switch {
		case model.RuleNamed(name) == nil:
			k.c.add(p, "invariants.require: unknown invariant %q (known: %s)", name, strings.Join(model.Names(), ", "))
		case k.s.Invariants.Off[name] != "":
			k.c.add(p, "invariants.require: %s is also turned off", name)
		}
	}
}

// explainInvariants lists the invariants in force and those turned off.
func (s *Scenario) explainInvariants(w io.Writer) {
	fmt.Fprintln(w, "invariants (checked on every NAPI whose threaded mode, link or busy-polling receiver a step sets, on RPS masks, once settled, and on every device a load sends to):")
	for _, r := range model.Rules {
		if why, off := s.Invariants.Off[r.Name]; off {
			fmt.Fprintf(w, "  - %s: off (%s)\n", r.Name, why)
			continue
		}
		req := ""
		if slices.Contains(s.Invariants.Require, r.Name) {
			req = " (required: not judged is an ERROR)"
		}
		fmt.Fprintf(w, "  - %s: %s%s\n", r.Name, r.Bound(), req)
	}
	var on []string
	walkSteps(s.Timeline, func(st *Step) {
		ks := append(s.LoadKnobs(st), st.Knobs()...)
		for _, k := range ks {
			what := k.Kind
			switch k.Kind {
			case results.KnobNAPIs:
				what = "GRO/XDP"
			case results.KnobBusyPoller:
				what = "busy-polling receiver " + k.Value
			case results.KnobRPS:
				what = "rps_cpus"
			case results.KnobUnknown:
				what = "anything (an exec or kselftest step)"
			}
			on = append(on, fmt.Sprintf("%s %s%s (line %d)", k.Dev, what, inNetns(k.Netns), k.Line))
		}
	})
	var feeds, udp, routed []string
	for _, name := range slices.Sorted(maps.Keys(s.Loads)) {
		l := s.Loads[name]
		if l.Routed {
			routed = append(routed, name)
			continue
		}
		dev, ns := l.ArrivesOn()
		if l.Datagrams() {
			feeds = append(feeds, fmt.Sprintf("%s%s (load %s)", dev, inNetns(ns), name))
		}
		if l.Kind == "udp" {
			udp = append(udp, name)
		}
	}
	if len(feeds) > 0 {
		fmt.Fprintf(w, "  rx-live on: %s\n", strings.Join(slices.Compact(feeds), ", "))
	}
	if len(udp) > 0 {
		fmt.Fprintf(w, "  udp-conserved on the namespaces the udp loads %s end in\n", strings.Join(udp, ", "))
	}
	if len(routed) > 0 {
		fmt.Fprintf(w, "  not judged by rx-live and udp-conserved: %s (routed through a forwarding namespace)\n", strings.Join(routed, ", "))
	}
	if len(on) == 0 {
		fmt.Fprintln(w, "  no step sets a NAPI's threaded mode, link, GRO or XDP or starts a busy-polling receiver: the mode rules judge nothing")
		return
	}
	fmt.Fprintf(w, "  judged after the changes of: %s\n", strings.Join(on, ", "))
}

// IsNIC says dev in netns is one of the topology's virtio-net NICs.
func (s *Scenario) IsNIC(netns, dev string) bool {
	return netns == "" && slices.ContainsFunc(s.Topology.NICs, func(n *NIC) bool { return n.Name == dev })
}

// Knobs says which device state a step's repetitions set, if any: a write
// of /sys/class/net/<dev>/threaded, a napi step setting threaded, a link,
// GRO, XDP or channels step, an exec or kselftest step (unknown); an rps step (one knob per queue), a write of a queue's
// rps_cpus or rps_flow_cnt, the rps_sock_flow_entries sysctl. Start, Done
// and, where it is "", Value are the runner's, per repetition.
func (st *Step) Knobs() []results.Knob {
	k := results.Knob{Step: st.Label(), Line: st.Pos.Line}
	switch {
	case st.Write != nil:
		return writeKnobs(k, st.Write)
	case st.NAPI != nil && len(st.NAPI.Threaded) > 0:
		k.Kind, k.Dev, k.Netns, k.Queue, k.NAPISet = results.KnobThreaded, st.NAPI.Dev, st.NAPI.Netns, st.NAPI.Queue, true
	case st.Link != nil:
		k.Kind, k.Dev, k.Netns = results.KnobLink, st.Link.Dev, st.Link.Netns
	case st.GRO != nil:
		k.Kind, k.Dev, k.Netns = results.KnobNAPIs, st.GRO.Dev, st.GRO.Netns
	case st.XDP != nil:
		k.Kind, k.Dev, k.Netns = results.KnobNAPIs, st.XDP.Dev, st.XDP.Netns
	case st.Channels != nil:
		k.Kind, k.Dev, k.Netns = results.KnobChannels, st.Channels.Dev, st.Channels.Netns
	case st.Exec != nil || len(st.Kselftest) > 0:
		k.Kind, k.Dev, k.Value = results.KnobUnknown, "*", "run"
	case st.RPS != nil:
		return rpsKnobs(k, st.RPS)
	case st.Sysctl != nil && st.Sysctl.Name == "net.core.rps_sock_flow_entries":
		k.Kind, k.Netns = results.KnobRFS, st.Sysctl.Netns
	default:
		return nil
	}
	return []results.Knob{k}
}

// writeKnobs reads a write step: the threaded file, or a queue's RPS files
// (/sys/class/net/<dev>/queues/rx-<n>/rps_cpus, rps_flow_cnt).
func writeKnobs(k results.Knob, w *Write) []results.Knob {
	rest, ok := strings.CutPrefix(path.Clean(w.Path), "/sys/class/net/")
	f := strings.Split(rest, "/")
	if !ok || f[0] == "" || f[0] == ".." || f[0] == "." {
		return nil
	}
	k.Dev, k.Netns = f[0], w.Netns
	switch {
	case len(f) == 2 && f[1] == "threaded":
		k.Kind = results.KnobThreaded
	case len(f) == 4 && f[1] == "queues" && (f[3] == "rps_cpus" || f[3] == "rps_flow_cnt"):
		q, err := strconv.Atoi(strings.TrimPrefix(f[2], "rx-"))
		if err != nil || !strings.HasPrefix(f[2], "rx-") {
			return nil
		}
		k.Kind, k.Queue = results.KnobRPS, &q
		if f[3] == "rps_flow_cnt" {
			k.Kind = results.KnobRFS
		}
	default:
		return nil
	}
	return []results.Knob{k}
}

// rpsKnobs are an rps step's: its mask on each queue, and its flow count.
func rpsKnobs(k results.Knob, r *RPS) []results.Knob {
	var out []results.Knob
	for _, q := range queuesOr(r.Queues) {
		k := k
		k.Dev, k.Netns, k.Queue = r.Dev, r.Netns, &q
		if len(r.CPUs) > 0 {
			k.Kind = results.KnobRPS
			out = append(out, k)
		}
		if r.FlowCnt != nil {
			k.Kind, k.Value = results.KnobRFS, strconv.Itoa(*r.FlowCnt)
			out = append(out, k)
		}
	}
	return out
}

// NetifRx lists, as knobs at 0s, the devices that hand what they receive to
// a CPU's backlog without NAPI (netif_rx), unless their queue has an RPS
// mask: every veth end (without GRO or XDP veth has no NAPI), lo where a
// load's sender and sink share a namespace, and "*" where an exec or
// kselftest step may make traffic of its own.
func (s *Scenario) NetifRx() []results.Knob {
	var out []results.Knob
	add := func(dev, netns string) {
		out = append(out, results.Knob{Kind: results.KnobNetifRx, Dev: dev, Netns: netns, Value: "on"})
	}
	for _, v := range s.Topology.Veths {
		add(v.Name, v.Netns)
		add(v.Peer.Name, v.Peer.Netns)
	}
	lo := map[string]bool{}
	for _, name := range sortedKeys(s.Loads) {
		if dev, ns := s.Loads[name].ArrivesOn(); dev == "lo" && !lo[ns] {
			lo[ns] = true
			add("lo", ns)
		}
	}
	other := false
	walkSteps(s.Timeline, func(st *Step) { other = other || st.Exec != nil || len(st.Kselftest) > 0 })
	if other {
		add("*", "")
	}
	return out
}

// ArrivesOn names the device a load's packets arrive on: the sink's
// device, or lo where the sender shares the sink's namespace.
func (l *Load) ArrivesOn() (dev, netns string) {
	if !l.From.Host && l.From.Netns == l.SinkNetns {
		return "lo", l.SinkNetns
	}
	return l.SinkDev, l.SinkNetns
}

// Datagrams says the load's sender puts every packet it counts on the
// wire at once: udp, and xsk fed by a udp sender (not tcp, whose writes
// wait for the window, nor an rr client, which waits for answers).
func (l *Load) Datagrams() bool {
	return l.Kind == "udp" || l.Kind == "xsk" && l.XSK != nil && l.XSK.Mode == XSKSink
}

// SetsRPS says a step sets an RPS mask: the run then reads softnet_stat
// with who polled, for the rps rule.
func (s *Scenario) SetsRPS() bool { return s.sets(results.KnobRPS) }

// LoadKnobs says which busy-polling receivers a start or stop step starts
// or stops: one knob per load with busy_poll (kinds udp, tcp, rr: an xsk
// load's busy polling follows its receive mode), on the sink's device.
func (s *Scenario) LoadKnobs(st *Step) []results.Knob {
	names, value := st.Start, results.BusyPollerOn
	if len(st.Stop) > 0 {
		names, value = st.Stop, results.BusyPollerOff
	}
	var out []results.Knob
	for _, n := range names {
		l := s.Loads[n]
		if l == nil || l.BusyPoll <= 0 || l.Kind == "xsk" || l.SinkDev == "" {
			continue
		}
		out = append(out, results.Knob{Step: st.Label(), Line: st.Pos.Line, Kind: results.KnobBusyPoller,
			Dev: l.SinkDev, Netns: l.SinkNetns, Value: value})
	}
	return out
}

// SetsThreaded says a step sets a device's threaded mode (sysfs or
// napi-set): the run then reads the napi/ kthreads with who polled.
func (s *Scenario) SetsThreaded() bool { return s.sets(results.KnobThreaded) }

// sets says a step sets a knob of that kind.
func (s *Scenario) sets(kind string) bool {
	found := false
	walkSteps(s.Timeline, func(st *Step) {
		for _, k := range st.Knobs() {
			found = found || k.Kind == kind
		}
	})
	return found
}

// walkSteps calls f on every step, parallel branches included, in order.
func walkSteps(steps []*Step, f func(*Step)) {
	for _, st := range steps {
		f(st)
		walkSteps(st.Parallel, f)
	}
}
