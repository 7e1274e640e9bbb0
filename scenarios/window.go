package scenarios

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"napilab/results/metrics"
)

// Window is a span of the timeline tied to named steps. Exactly one of Step
// (while it runs), After (from its end, For long) or From/To (from the start
// of one to the end of another) is set; Skip drops the window's first part.
type Window struct {
	Step  string   `yaml:"step"`
	After string   `yaml:"after"`
	For   Duration `yaml:"for"`
	From  string   `yaml:"from"`
	To    string   `yaml:"to"`
	Skip  Duration `yaml:"skip"`
}

// String describes the window the way explain and the report show it.
func (w *Window) String() string {
	var s string
	switch {
	case w.Step != "":
		s = fmt.Sprintf("while %q runs", w.Step)
	case w.After != "":
		s = fmt.Sprintf("in the %v after %q ends", w.For.D(), w.After)
	default:
		s = fmt.Sprintf("from the start of %q to the end of %q", w.From, w.To)
	}
	if w.Skip > 0 {
		s += fmt.Sprintf(" (skipping its first %v)", w.Skip.D())
	}
	return s
}

// Span says which part of the timeline an assertion looks at.
func (a *Assert) Span() string {
	switch {
	case a.Each != "":
		return fmt.Sprintf("in the %v after each repetition of %q", a.Within.D(), a.Each)
	case a.During != nil:
		return a.During.String()
	}
	return "over the timeline"
}

// Polls bounds how often a NAPI (or every NAPI of a device) was polled in
// one execution context: softirq, ksoftirqd, kthread, busypoll or any.
type Polls struct {
	NAPI    string      `yaml:"napi"` // <dev>/<napi>, e.g. eth0/rx-0
	Dev     string      `yaml:"dev"`  // every NAPI of the device
	Context PollContext `yaml:"context"`
	CPU     *int        `yaml:"cpu"`
	// Packets counts the packets the polls returned instead of the polls.
	Packets bool     `yaml:"packets"`
	Min     *float64 `yaml:"min"`
	Max     *float64 `yaml:"max"`
}

// Target returns the device and the NAPI ("any" for a whole device).
func (p *Polls) Target() (dev, napi string) {
	if p.Dev != "" {
		return p.Dev, "any"
	}
	i := strings.LastIndexByte(p.NAPI, '/')
	if i < 0 {
		return p.NAPI, ""
	}
	return p.NAPI[:i], p.NAPI[i+1:]
}

// Metric names the polls metric for a context.
func (p *Polls) Metric(context string) string {
	dev, napi := p.Target()
	what := "polls"
	if p.Packets {
		what = "packets"
	}
	m := fmt.Sprintf("napi.%s.%s.%s.%s", what, dev, napi, context)
	if p.CPU != nil {
		m += fmt.Sprintf(".cpu%d", *p.CPU)
	}
	return m
}

// PollContext is one context, or (with each:) the context expected after
// each value the repeated step wrote: {"1": kthread, "0": softirq}.
type PollContext struct {
	Fixed   string
	ByValue map[string]string
}

// UnmarshalYAML takes a scalar or a mapping of values to contexts.
func (c *PollContext) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		c.Fixed = n.Value
		return nil
	case yaml.MappingNode:
		return n.Decode(&c.ByValue)
	}
	return typeError(n, "context: want a context name or a mapping of written values to contexts")
}

// Contexts lists every context the assertion may name.
func (c PollContext) Contexts() []string {
	if c.ByValue == nil {
		return []string{c.Fixed}
	}
	var out []string
	for _, v := range sortedKeys(c.ByValue) {
		out = append(out, c.ByValue[v])
	}
	return out
}

// Windowed says whether an assertion kind can take during: or each:.
func (a *Assert) Windowed() bool {
	return a.Grows != nil || a.Delta != nil || a.Rate != nil || a.Ratio != nil || a.Polls != nil
}

// StepNames maps every named step to its position.
func (s *Scenario) StepNames() map[string]*Step {
	out := map[string]*Step{}
	eachStep(s.Timeline, func(st *Step) {
		if st.Name != "" {
			out[st.Name] = st
		}
	})
	return out
}

func cycle(one string, many []string, i int) string {
	if len(many) > 0 {
		return many[i%len(many)]
	}
	return one
}

// NeedsPolls says whether an assertion reads who polled (napi_polls).
func (s *Scenario) NeedsPolls() bool {
	for _, m := range s.Metrics() {
		if m.Source == metrics.SourceNAPIPolls {
			return true
		}
	}
	return false
}
