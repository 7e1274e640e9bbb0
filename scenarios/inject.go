package scenarios

import (
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

// Inject is a race-widening probe: the kernel busy-waits Delay at a function's
// entry (or return) with a probability, up to Count times, while armed. The
// lab attaches a BPF kprobe; the code under test is not changed.
type Inject struct {
	Name string `yaml:"name"` // default: At
	// At is a kallsyms symbol, optionally +offset: napi_enable, napi_enable+0x1c.
	At string `yaml:"at"`
	// On is entry (default) or return.
	On          string   `yaml:"when"`
	Delay       Duration `yaml:"delay"`
	Probability *float64 `yaml:"probability"` // default 1
	Count       int      `yaml:"count"`       // most firings, 0 = no limit
	// Armed says whether the probe fires from the start (default true); an
	// inject step switches it.
	Armed *bool `yaml:"armed"`
	Pos   Pos   `yaml:"-"`
}

// Injection bounds.
const (
	MaxInjectDelay = 10 * time.Millisecond // a kprobe spins with preemption off
	MinInjectDelay = time.Microsecond
)

var probeAt = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*(\+(0x[0-9a-fA-F]+|[0-9]+))?$`)

// UnmarshalYAML records the line.
func (in *Inject) UnmarshalYAML(n *yaml.Node) error {
	type raw Inject
	in.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(in))
}

// resolveInjects fills the defaults.
func (s *Scenario) resolveInjects() {
	for _, in := range s.Inject {
		if in.Name == "" {
			in.Name = in.At
		}
		if in.Probability == nil {
			p := 1.0
			in.Probability = &p
		}
		if in.Armed == nil {
			t := true
			in.Armed = &t
		}
		if in.On == "" {
			in.On = "entry"
		}
	}
}

// injects checks the probes and the steps that arm them.
func (k *checker) injects() {
	c := k.c
	names := map[string]bool{}
	for _, in := range k.s.Inject {
		p := in.Pos
		if !probeAt.MatchString(in.At) {
			c.add(p, "inject at %q: want a kernel symbol, optionally +offset (napi_enable, napi_enable+0x1c)", in.At)
		}
		if names[in.Name] {
			c.add(p, "inject %q declared twice (name: tells probes at one function apart)", in.Name)
		}
		names[in.Name] = true
		if in.On != "entry" && in.On != "return" {
			c.add(p, "inject when %q: want entry or return", in.On)
		}
		if in.On == "return" && probeAt.MatchString(in.At) && regexp.MustCompile(`\+`).MatchString(in.At) {
			c.add(p, "inject when: return takes a symbol without +offset")
		}
		if d := in.Delay.D(); d < MinInjectDelay || d > MaxInjectDelay {
			c.add(p, "inject delay %v: want %v to %v (the kernel spins with preemption off)", d, MinInjectDelay, MaxInjectDelay)
		}
		if pr := *in.Probability; pr <= 0 || pr > 1 {
			c.add(p, "inject probability %g: want more than 0, at most 1", pr)
		}
		if in.Count < 0 {
			c.add(p, "inject count %d: want 0 (no limit) or more", in.Count)
		}
	}
	eachStep(k.s.Timeline, func(st *Step) {
		if st.Inject != nil && !names[st.Inject.Name] {
			c.add(st.Pos, "inject step: no probe %q under inject:", st.Inject.Name)
		}
	})
}
