package runner

import (
	"cmp"
	"slices"

	"napilab/images/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/model"
)

// knobs returns every repetition that changed a device's NAPI state, in
// the order issued: writes of /sys/class/net/<dev>/threaded, napi steps
// setting threaded, link steps.
func (t *timeline) knobs() []results.Knob {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []results.Knob
	for st, its := range t.iters {
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

// pollReads returns the napi_polls snapshots of the timeline placed where
// the guest read them (readAt's clock offset), in order; a snapshot whose
// source did not parse is left out.
func (t *timeline) pollReads() []model.Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := readAt(t.samples)
	var out []model.Snapshot
	for i := range t.samples {
		s := &t.samples[i]
		v, ok := s.Data.Values[wire.SourceNAPIPolls]
		if !ok || s.Group != pollsGroup && s.Group != metricsGroup {
			continue
		}
		lines, err := metrics.ParsePolls(v)
		if err != nil {
			continue
		}
		mid := at(s)
		out = append(out, model.Snapshot{From: mid - s.Data.Took/2, To: mid + s.Data.Took/2, Lines: lines})
	}
	slices.SortStableFunc(out, func(a, b model.Snapshot) int { return cmp.Compare(a.From, b.From) })
	return out
}

// invariants checks the run against the model's rules the scenario did not
// turn off, and lists those it did.
func (t *timeline) invariants(knobs []results.Knob) []results.Assert {
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
	for _, o := range model.Check(knobs, t.pollReads(), rules) {
		out = append(out, o.Assert())
	}
	return out
}
