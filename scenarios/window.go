package scenarios

import (
	"fmt"

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
