package runner

import (
	"cmp"
	"slices"

	"napilab/results"
	"napilab/results/model"
)

// knobs returns every repetition that changed a device's NAPI state, in
// the order issued: writes of /sys/class/net/<dev>/threaded, napi steps
// setting threaded, link, GRO, XDP and channels steps, RPS and RFS settings, the
// start and stop of busy-polling receivers; and, at 0s, the devices that
// feed a CPU's backlog without NAPI.
func (t *timeline) knobs() []results.Knob {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []results.Knob
	for st, its := range t.iters {
		for _, k := range t.s.LoadKnobs(st) {
			for _, it := range its {
				k.Start, k.Done, k.Failed = it.start, it.done, it.failed
				out = append(out, k)
			}
		}
		for _, k := range st.Knobs() {
			fixed := k.Value
			for _, it := range its {
				k.Start, k.Done, k.Value, k.Failed = it.start, it.done, cmp.Or(fixed, it.value), it.failed
				if k.Value != "" {
					out = append(out, k)
				}
			}
		}
	}
	for i := range out {
		out[i].NIC = t.s.IsNIC(out[i].Netns, out[i].Dev)
	}
	out = append(out, t.s.NetifRx()...)
	slices.SortStableFunc(out, func(a, b results.Knob) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// sampleLines returns the timeline's samples as samples.jsonl holds them.
func (t *timeline) sampleLines() []results.SampleLine {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := make([]results.SampleLine, 0, len(t.samples))
	for _, s := range t.samples {
		lines = append(lines, results.SampleLine{Group: s.Group, Host: s.Host,
			Sample: results.SampleSnapshot{T: s.Data.T, Took: s.Data.Took, Values: s.Data.Values}})
	}
	return lines
}

// invariants checks the run against the model's rules the scenario did not
// turn off, and lists those it did; release (uname -r) says which rules hold.
func (t *timeline) invariants(release string, knobs []results.Knob, loads []results.Load) []results.Assert {
	var rules []*model.Rule
	var out []results.Assert
	for _, r := range model.Rules {
		if why, off := t.s.Invariants.Off[r.Name]; off {
			// Shown in every report, with the scenario's reason.
			out = append(out, results.Assert{Name: r.Name, Kind: results.KindInvariant, Passed: true, Unmeasured: true,
				Measured: "off: " + why, Bound: r.Bound()})
			continue
		}
		rules = append(rules, r)
	}
	judged := map[string]bool{}
	lines := t.sampleLines()
	rec := model.Record{Kernel: model.KernelOf(release), Knobs: knobs, Snaps: model.Reads(lines), Loads: loads,
		Totals: model.TotalsOf(lines)}
	for _, o := range model.Check(rec, rules) {
		a := o.Assert()
		judged[a.Name] = !a.Unmeasured
		out = append(out, a)
	}
	// An invariant the scenario requires and the run could not judge is
	// the lab's failure to measure it: ERROR, never FAIL.
	for _, name := range t.s.Invariants.Require {
		if judged[name] {
			continue
		}
		i := slices.IndexFunc(out, func(a results.Assert) bool { return a.Name == name })
		if i < 0 {
			r := model.RuleNamed(name)
			out = append(out, results.Assert{Name: name, Kind: results.KindInvariant, Unmeasured: true,
				Measured: "not measured: the run never reached its state (or the kernel's release has no such rule)", Bound: r.Bound()})
			i = len(out) - 1
		}
		out[i].Passed, out[i].Unmeasured = false, true
		out[i].Measured += " (required by the scenario)"
	}
	return out
}
