package scenarios

import (
	"fmt"
	"strings"

	"napilab/results"
)

// Latency bounds an rr load's request/response latency percentiles.
type Latency struct {
	Load string   `yaml:"load"`
	P50  Duration `yaml:"p50"`
	P90  Duration `yaml:"p90"`
	P99  Duration `yaml:"p99"`
	P999 Duration `yaml:"p999"`
}

// percentiles lists the bounds by name, set or not.
func (x *Latency) percentiles() []struct {
	name string
	want Duration
} {
	return []struct {
		name string
		want Duration
	}{{"p50", x.P50}, {"p90", x.P90}, {"p99", x.P99}, {"p99.9", x.P999}}
}

func (x *Latency) check(k *checker, a *Assert) {
	if l := k.loadRef(a.Pos, x.Load); l != nil && !l.HasLatency() {
		k.c.add(a.Pos, "latency needs an rr load (or an xsk rr load), %q is not one", x.Load)
	}
	if x.P50+x.P90+x.P99+x.P999 == 0 {
		k.c.add(a.Pos, "latency needs at least one of p50, p90, p99, p999")
	}
}

func (x *Latency) explain(*Assert) string {
	var parts []string
	for _, b := range x.percentiles() {
		if b.want > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %v", b.name, b.want.D()))
		}
	}
	return fmt.Sprintf("%s request/response latency %s", x.Load, strings.Join(parts, ", "))
}

func (x *Latency) name() string { return x.Load + " latency" }

func (x *Latency) timingOnly() bool { return true }

func (x *Latency) metrics() []string { return nil }

func (x *Latency) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	r := a.result(x)
	_, sender := rec.Load(x.Load)
	if sender == nil || sender.Latency == nil || sender.Latency.Count == 0 {
		r.Measured = "no request/response completed"
		r.Bound = "latency figures"
		return r
	}
	l := sender.Latency
	got := map[string]float64{"p50": l.P50, "p90": l.P90, "p99": l.P99, "p99.9": l.P999}
	var measured, bounds []string
	r.Passed = true
	for _, c := range x.percentiles() {
		if c.want == 0 {
			continue
		}
		measured = append(measured, fmt.Sprintf("%s %.0fus", c.name, got[c.name]))
		bounds = append(bounds, fmt.Sprintf("%s <= %v", c.name, c.want.D()))
		r.Passed = r.Passed && got[c.name] <= float64(c.want.D().Microseconds())
	}
	r.Measured = strings.Join(measured, ", ") + fmt.Sprintf(" over %d transactions", l.Count)
	r.Bound = strings.Join(bounds, ", ")
	return r
}
