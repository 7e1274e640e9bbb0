package scenarios

import (
	"strings"

	"napilab/results/metrics"
)

// Metrics returns every metric the scenario's assertions and perf budgets
// read (a budget's rate, name/s, as its metric), so that the runner samples
// them and computes their figures. Metric names are defined in one place,
// metrics.Parse (see metrics.Known).
func (s *Scenario) Metrics() []metrics.Ref {
	var out []metrics.Ref
	add := func(name string) {
		if m, err := metrics.Parse(name); err == nil {
			out = append(out, m)
		}
	}
	for _, a := range s.Asserts {
		if x, _ := a.kind(); x != nil {
			for _, m := range x.metrics() {
				add(m)
			}
		}
	}
	if s.Perf != nil {
		for _, b := range s.Perf.Budgets {
			add(strings.TrimSuffix(b.Metric, "/s"))
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

// FigureMetrics are recorded for every run, so any two runs can be compared
// (lab compare) and budgeted whatever the assertions; the runner computes
// each one's change and its rate (/s).
var FigureMetrics = []string{
	"softirqs.NET_RX", "softirqs.NET_TX", "softnet.processed", "softnet.dropped", "softnet.time_squeeze",
	"softnet.received_rps", "interrupts.CAL", "interrupts.RES", "snmp.Udp.InDatagrams", "snmp.Udp.RcvbufErrors",
	"ksoftirqd.cpu_seconds", "napi.cpu_seconds", "ksoftirqd.run_us", "napi.run_us", "ksoftirqd.sleeps", "napi.sleeps",
	"ksoftirqd.preempted", "napi.preempted",
}

// PerCPUFigures are the metrics recorded per CPU too (softirqs.NET_RX.cpu0).
var PerCPUFigures = []string{"ksoftirqd.cpu_seconds", "softirqs.NET_RX", "interrupts.CAL", "interrupts.RES", "softnet.received_rps"}

// PerDatagram are the costs also given per delivered UDP datagram, as
// "<metric> per datagram" (<metric> / snmp.Udp.InDatagrams; where the root
// namespace delivered none, / what the udp loads' sinks received): the seeds'
// softirqs and IPIs per packet, the receiving threads' CPU time and sleeps
// (a wakeup each), and the polls of every context (who polled).
var PerDatagram = []string{"softirqs.NET_RX", "interrupts.CAL", "interrupts.RES",
	"ksoftirqd.run_us", "napi.run_us", "ksoftirqd.sleeps", "napi.sleeps",
	"napi.polls.any.any.softirq", "napi.polls.any.any.ksoftirqd", "napi.polls.any.any.kthread", "napi.polls.any.any.busypoll"}

// PerDatagramSuffix follows a PerDatagram metric in its figure's name.
const PerDatagramSuffix = " per datagram"

// LoadFigures follow a load's name (udp.rx_pps): packets per second received
// and sent; LatencyFigures are an rr (or xsk rr) load's percentiles in
// microseconds.
var (
	LoadFigures    = []string{"rx_pps", "sent_pps"}
	LatencyFigures = []string{"p5_us", "p50_us", "p90_us", "p95_us", "p99_us", "p999_us"}
)
