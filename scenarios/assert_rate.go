package scenarios

import (
	"fmt"

	"napilab/results"
)

// Rate checks a metric's change per second against Min and/or Max.
type Rate Bound

func (x *Rate) check(k *checker, a *Assert) {
	k.metric(a.Pos, x.Metric)
	k.bounds(a.Pos, x.Min, x.Max)
}

func (x *Rate) explain(a *Assert) string {
	return fmt.Sprintf("%s per second %s: %s%s", x.Metric, span(a), bounds(x.Min, x.Max), each(a))
}

func (x *Rate) name() string { return x.Metric + " rate" }

// timingOnly: a metric per second of wall clock.
func (x *Rate) timingOnly() bool { return true }

func (x *Rate) metrics() []string { return []string{x.Metric} }

func (x *Rate) bounds() (min, max *float64) { return x.Min, x.Max }

func (x *Rate) unit() string { return "/s" }

func (x *Rate) context(string) (string, bool) { return "", true }

func (x *Rate) measure(over Between, _ string, from, to float64) (float64, error) {
	d, secs, err := over(x.Metric, from, to)
	if err == nil && secs <= 0 {
		err = fmt.Errorf("no time between the snapshots")
	}
	return d / secs, err
}

func (x *Rate) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	return evalBound(rec, a.result(x), x.Metric, x.Min, x.Max, true)
}
