package scenarios

import (
	"fmt"
	"time"

	"napilab/internal/suggest"
)

// declared says whether a NIC or a veth end (in any netns) has that name.
func (k *checker) declared(dev string) bool {
	return k.index().devNames[dev]
}

// queues returns a declared device's RX queue count, 0 when unknown.
func (k *checker) queues(dev string) int {
	return k.index().rxQueues[dev]
}

// window checks during: and each: against the timeline's step names.
func (k *checker) window(a *Assert) {
	c, p := k.c, a.Pos
	if a.During == nil && a.Each == "" {
		if a.Within != 0 {
			c.add(p, "within: needs each:")
		}
		return
	}
	if !a.Windowed() {
		c.add(p, "during: and each: apply to grows, delta, rate, ratio and polls assertions")
		return
	}
	if a.During != nil && a.Each != "" {
		c.add(p, "use during: or each:, not both")
		return
	}
	names := k.index().steps
	ref := func(what, name string) *Step {
		switch names[name] {
		case 0:
			if !k.s.written.steps[name] { // else its own error was reported
				c.add(p, "%s %q: no step has that name (steps are named with name:)%s", what, name, didYouMeanStep(name, names))
			}
			return nil
		case 1:
			return k.index().named[name]
		}
		c.add(p, "%s %q: %d steps share that name", what, name, names[name])
		return nil
	}
	if a.Each != "" {
		st := ref("each", a.Each)
		if st != nil && st.Every == 0 {
			c.add(p, "each %q: the step does not repeat (no every:)", a.Each)
		}
		if a.Within.D() < 10*time.Millisecond {
			c.add(p, "each needs within: of at least 10ms (the span after every repetition)")
		}
		if st != nil && st.Every > 0 && a.Within > st.Every {
			c.add(p, "within %v is longer than the step's period %v: repetitions would overlap", a.Within.D(), st.Every.D())
		}
		if pl := a.Polls; st != nil && pl != nil && pl.Context.ByValue != nil {
			for v := range pl.Context.ByValue {
				if !k.stepWrites(st, v) {
					c.add(p, "context for value %q: step %q never sets that value", v, a.Each)
				}
			}
		}
		return
	}
	w := a.During
	forms := 0
	if w.Step != "" {
		forms++
		ref("during step", w.Step)
	}
	if w.After != "" {
		forms++
		ref("during after", w.After)
		if w.For <= 0 {
			c.add(p, "during after: needs for: (how long the window lasts)")
		}
	}
	if w.From != "" || w.To != "" {
		forms++
		if w.From == "" || w.To == "" {
			c.add(p, "during from: needs to: and the other way round")
		} else {
			ref("during from", w.From)
			ref("during to", w.To)
		}
	}
	if forms != 1 {
		c.add(p, "during needs exactly one of step:, after: (with for:), from: with to:")
	}
	if w.For > 0 && w.After == "" {
		c.add(p, "during for: goes with after:")
	}
	if w.Skip < 0 || w.For > 0 && w.Skip >= w.For {
		c.add(p, "during skip %v leaves nothing of the window", w.Skip.D())
		return
	}
	if w.For > 0 && w.For-w.Skip < Duration(MinWindow) {
		c.add(p, "during: a window of %v is below the %v the lab resolves (a snapshot takes 5-100 ms under TCG)", (w.For - w.Skip).D(), MinWindow)
	}
	if st := k.index().named[w.Step]; w.Step != "" && names[w.Step] == 1 {
		if span, ok := stepSpan(st); ok && w.Skip >= Duration(span) {
			c.add(p, "during skip %v leaves nothing of step %q, which lasts %v", w.Skip.D(), w.Step, span)
		} else if ok && span-w.Skip.D() < MinWindow {
			c.add(p, "during step %q: a window of %v is below the %v the lab resolves (a snapshot takes 5-100 ms under TCG)", w.Step, span-w.Skip.D(), MinWindow)
		}
	}
	if w.From != "" && w.To != "" && names[w.From] == 1 && names[w.To] == 1 && k.index().order[w.From] > k.index().order[w.To] {
		c.add(p, "during from %q comes after to %q in the timeline: the window would end before it starts", w.From, w.To)
	}
}

func didYouMeanStep(name string, names map[string]int) string {
	if best := suggest.Closest(name, sortedKeys(names)); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}

// MinWindow is the shortest window the lab measures: docs/scenarios.md's 100 ms.
const MinWindow = 100 * time.Millisecond

// stepSpan is how long a step lasts when the file says: a sleep, a
// repetition's for: or count: times every:, the longest of a parallel's
// branches.
func stepSpan(st *Step) (time.Duration, bool) {
	switch {
	case st.Every > 0 && st.For > 0:
		return st.For.D(), true
	case st.Every > 0 && st.Count > 0:
		return time.Duration(st.Count) * st.Every.D(), true
	case st.Sleep > 0:
		return st.Sleep.D(), true
	case len(st.Parallel) > 0:
		var longest time.Duration
		for _, b := range st.Parallel {
			d, ok := stepSpan(b)
			if !ok {
				return 0, false
			}
			longest = max(longest, d)
		}
		return longest, true
	}
	return 0, false
}

// stepWrites says whether some iteration of st sets value v.
func (k *checker) stepWrites(st *Step, v string) bool {
	for i := 0; i < 64; i++ {
		if st.Value(i) == v {
			return true
		}
	}
	return false
}
