package scenarios

import (
	"fmt"

	"napilab/results"
)

// Grows checks that a metric grew by at least Min over the timeline.
type Grows struct {
	Metric string  `yaml:"metric"` // e.g. softirqs.NET_RX, softirqs.NET_RX.cpu1
	Min    float64 `yaml:"min"`
}

func (x *Grows) check(k *checker, a *Assert) { k.metric(a.Pos, x.Metric) }

func (x *Grows) explain(a *Assert) string {
	return fmt.Sprintf("%s grows by >= %g %s%s", x.Metric, max(x.Min, 1), span(a), each(a))
}

func (x *Grows) name() string { return x.Metric + " grows" }

func (x *Grows) timingOnly() bool { return false }

func (x *Grows) metrics() []string { return []string{x.Metric} }

func (x *Grows) bounds() (lo, hi *float64) {
	m := max(x.Min, 1)
	return &m, nil
}

func (x *Grows) unit() string { return "" }

func (x *Grows) context(string) (string, bool) { return "", true }

func (x *Grows) measure(over Between, _ string, from, to float64) (float64, error) {
	return metricDelta(over, x.Metric, from, to)
}

func (x *Grows) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	min, max := x.bounds()
	return evalBound(rec, a.result(x), x.Metric, min, max, false)
}
