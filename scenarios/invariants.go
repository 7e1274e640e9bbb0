package scenarios

import (
	"fmt"
	"io"
	"path"
	"slices"
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
	fmt.Fprintln(w, "invariants (checked on every NAPI whose threaded mode, link or busy-polling receiver a step sets, once settled):")
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
		ks := s.LoadKnobs(st)
		if k, ok := st.Knob(); ok {
			ks = append(ks, k)
		}
		for _, k := range ks {
			what := k.Kind
			switch k.Kind {
			case results.KnobNAPIs:
				what = "GRO/XDP"
			case results.KnobBusyPoller:
				what = "busy-polling receiver " + k.Value
			}
			on = append(on, fmt.Sprintf("%s %s%s (line %d)", k.Dev, what, inNetns(k.Netns), k.Line))
		}
	})
	if len(on) == 0 {
		fmt.Fprintln(w, "  no step sets a NAPI's threaded mode, link, GRO or XDP or starts a busy-polling receiver: none will be judged")
		return
	}
	fmt.Fprintf(w, "  judged after the changes of: %s\n", strings.Join(on, ", "))
}

// Knob says which device state a step's repetitions set, if any: a write
// of /sys/class/net/<dev>/threaded, a napi step setting threaded, a link,
// GRO or XDP step. Start, Done and Value are the runner's, per repetition.
func (st *Step) Knob() (results.Knob, bool) {
	k := results.Knob{Step: st.Label(), Line: st.Pos.Line}
	switch {
	case st.Write != nil:
		dir, file := path.Split(path.Clean(st.Write.Path))
		dev, ok := strings.CutPrefix(strings.TrimSuffix(dir, "/"), "/sys/class/net/")
		if file != "threaded" || !ok || dev == "" || strings.Contains(dev, "/") {
			return k, false
		}
		k.Kind, k.Dev, k.Netns = results.KnobThreaded, dev, st.Write.Netns
	case st.NAPI != nil && len(st.NAPI.Threaded) > 0:
		k.Kind, k.Dev, k.Netns, k.Queue, k.NAPISet = results.KnobThreaded, st.NAPI.Dev, st.NAPI.Netns, st.NAPI.Queue, true
	case st.Link != nil:
		k.Kind, k.Dev, k.Netns = results.KnobLink, st.Link.Dev, st.Link.Netns
	case st.GRO != nil:
		k.Kind, k.Dev, k.Netns = results.KnobNAPIs, st.GRO.Dev, st.GRO.Netns
	case st.XDP != nil:
		k.Kind, k.Dev, k.Netns = results.KnobNAPIs, st.XDP.Dev, st.XDP.Netns
	default:
		return k, false
	}
	return k, true
}

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
func (s *Scenario) SetsThreaded() bool {
	found := false
	walkSteps(s.Timeline, func(st *Step) {
		if k, ok := st.Knob(); ok && k.Kind == results.KnobThreaded {
			found = true
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
