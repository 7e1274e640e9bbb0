package runner

import (
	"cmp"
	"slices"

	"napilab/results"
	"napilab/results/model"
)

// knobs returns every repetition that changed a device's NAPI state, in
// the order issued: writes of /sys/class/net/<dev>/threaded, napi steps
// setting threaded, link, GRO and XDP steps, and the start and stop of
// busy-polling receivers.
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
		k, ok := st.Knob()
		if !ok {
			continue
		}
		for _, it := range its {
			k.Start, k.Done, k.Value, k.Failed = it.start, it.done, it.value, it.failed
			if k.Value != "" {
				out = append(out, k)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b results.Knob) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// pollReads returns the timeline's napi_polls snapshots as model.Reads
// places them.
func (t *timeline) pollReads() []model.Snapshot {
	t.mu.Lock()
	lines := make([]results.SampleLine, 0, len(t.samples))
	for _, s := range t.samples {
		lines = append(lines, results.SampleLine{Group: s.Group, Host: s.Host,
			Sample: results.SampleSnapshot{T: s.Data.T, Took: s.Data.Took, Values: s.Data.Values}})
	}
	t.mu.Unlock()
	return model.Reads(lines)
}

// invariants checks the run against the model's rules the scenario did not
// turn off, and lists those it did; release (uname -r) says which rules hold.
func (t *timeline) invariants(release string, knobs []results.Knob) []results.Assert {
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
	for _, o := range model.Check(model.KernelOf(release), knobs, t.pollReads(), rules) {
		out = append(out, o.Assert())
	}
	return out
}
