package scenarios

import (
	"fmt"

	"napilab/results"
)

// Delta checks a metric's change over the timeline against Min and/or Max.
type Delta Bound

// Bound is the YAML shape of delta and rate: a metric, Min and/or Max.
type Bound struct {
	Metric string   `yaml:"metric"`
	Min    *float64 `yaml:"min"`
	Max    *float64 `yaml:"max"`
}

func (x *Delta) check(k *checker, a *Assert) {
	k.metric(a.Pos, x.Metric)
	k.bounds(a.Pos, x.Min, x.Max)
}

func (x *Delta) explain(a *Assert) string {
	return fmt.Sprintf("change of %s %s: %s%s", x.Metric, span(a), bounds(x.Min, x.Max), each(a))
}

func (x *Delta) name() string { return x.Metric + " delta" }

func (x *Delta) timingOnly() bool { return false }

func (x *Delta) metrics() []string { return []string{x.Metric} }

func (x *Delta) bounds() (min, max *float64) { return x.Min, x.Max }

func (x *Delta) unit() string { return "" }

func (x *Delta) context(string) (string, bool) { return "", true }

func (x *Delta) measure(over Between, _ string, from, to float64) (float64, error) {
	return metricDelta(over, x.Metric, from, to)
}

func (x *Delta) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	return evalBound(rec, a.result(x), x.Metric, x.Min, x.Max, false)
}
