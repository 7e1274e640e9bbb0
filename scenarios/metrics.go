package scenarios

import "napilab/results"

// Metrics returns every metric the scenario's assertions read. Metric names
// are defined in one place, results.ParseMetric (see results.KnownMetrics).
func (s *Scenario) Metrics() []results.MetricRef {
	var out []results.MetricRef
	add := func(name string) {
		if m, err := results.ParseMetric(name); err == nil {
			out = append(out, m)
		}
	}
	for _, a := range s.Asserts {
		switch {
		case a.Grows != nil:
			add(a.Grows.Metric)
		case a.Delta != nil:
			add(a.Delta.Metric)
		case a.Rate != nil:
			add(a.Rate.Metric)
		case a.Ratio != nil:
			add(a.Ratio.Num)
			add(a.Ratio.Den)
		case a.Polls != nil:
			for _, ctx := range a.Polls.Context.Contexts() {
				add(a.Polls.Metric(ctx))
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
