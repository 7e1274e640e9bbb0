package runner

import "strconv"

// figureMetrics are recorded for every run, so any two runs can be compared
// (lab compare) whatever their assertions.
var figureMetrics = []string{
	"softirqs.NET_RX", "softirqs.NET_TX", "softnet.processed", "softnet.dropped", "softnet.time_squeeze",
	"softnet.received_rps", "interrupts.CAL", "interrupts.RES", "snmp.Udp.InDatagrams", "snmp.Udp.RcvbufErrors",
	"ksoftirqd.cpu_seconds", "napi.cpu_seconds",
}

// figures computes the run's numbers: for each metric its change over the
// timeline and its rate per second, per-CPU forms of the CPU-time metrics,
// each load's delivered rate and latency, and NET_RX per datagram.
func (t *timeline) figures(cpus int) map[string]float64 {
	out := map[string]float64{}
	names := append([]string{}, figureMetrics...)
	for c := 0; c < cpus; c++ {
		cpu := ".cpu" + strconv.Itoa(c)
		names = append(names, "ksoftirqd.cpu_seconds"+cpu, "softirqs.NET_RX"+cpu, "interrupts.CAL"+cpu, "interrupts.RES"+cpu, "softnet.received_rps"+cpu)
	}
	for _, m := range t.s.Metrics() {
		names = append(names, m.Name)
	}
	for _, n := range names {
		d, secs, err := t.metricDelta(n)
		if err != nil {
			continue
		}
		out[n] = d
		if secs > 0 {
			out[n+"/s"] = d / secs
		}
	}
	if rx, dg := out["softirqs.NET_RX"], out["snmp.Udp.InDatagrams"]; dg > 0 {
		out["softirqs.NET_RX per datagram"] = rx / dg
	}
	for _, l := range t.loadResults() {
		if secs := float64(len(l.PerSecond)); secs > 0 {
			out[l.Name+".rx_pps"] = float64(l.Received) / secs
			out[l.Name+".sent_pps"] = float64(l.Sent) / secs
		}
		if l.Latency != nil && l.Latency.Count > 0 {
			out[l.Name+".p50_us"] = l.Latency.P50
			out[l.Name+".p99_us"] = l.Latency.P99
			out[l.Name+".p999_us"] = l.Latency.P999
		}
	}
	return out
}
