package runner

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/scenarios"
)

// figures computes the run's numbers: for each metric its change over the
// timeline and its rate per second, per-CPU forms of the CPU-time metrics,
// each load's delivered rate and latency, softirqs and IPIs per datagram, and who
// polled (pollFigures).
func (t *timeline) figures(rec *record, cpus int) map[string]float64 {
	out := map[string]float64{}
	names := append([]string{}, scenarios.FigureMetrics...) // the names budgets are checked against
	for c := 0; c < cpus; c++ {
		for _, m := range scenarios.PerCPUFigures {
			names = append(names, m+".cpu"+strconv.Itoa(c))
		}
	}
	for _, m := range t.s.Metrics() {
		names = append(names, m.Name)
	}
	for _, n := range names {
		d, secs, err := rec.Delta(n)
		if err != nil {
			continue
		}
		out[n] = d
		if secs > 0 {
			out[n+"/s"] = d / secs
		}
	}
	rec.pollFigures(out)
	loads := t.loadResults()
	if dg := datagrams(out, loads); dg > 0 {
		for _, m := range scenarios.PerDatagram {
			if v, ok := out[m]; ok {
				out[m+scenarios.PerDatagramSuffix] = v / dg
			}
		}
	}
	for _, l := range loads {
		if secs := float64(len(l.PerSecond)); secs > 0 {
			out[l.Name+".rx_pps"] = float64(l.Received) / secs
			out[l.Name+".sent_pps"] = float64(l.Sent) / secs
		}
		if l.Latency != nil && l.Latency.Count > 0 {
			out[l.Name+".p5_us"] = l.Latency.P5
			out[l.Name+".p50_us"] = l.Latency.P50
			out[l.Name+".p90_us"] = l.Latency.P90
			out[l.Name+".p95_us"] = l.Latency.P95
			out[l.Name+".p99_us"] = l.Latency.P99
			out[l.Name+".p999_us"] = l.Latency.P999
		}
	}
	return out
}

// datagrams is what the per-datagram costs divide by: the UDP datagrams the
// root namespace delivered to sockets or, where it delivered none (every
// sink in another namespace: a forwarded flood), what the udp loads' sinks
// received.
func datagrams(out map[string]float64, loads []results.Load) float64 {
	if dg := out["snmp.Udp.InDatagrams"]; dg > 0 {
		return dg
	}
	var n uint64
	for _, l := range loads {
		if l.Kind == "udp" {
			n += l.Received
		}
	}
	return float64(n)
}

// pollFigures adds who polled over the timeline: for every context, the
// change of napi.polls and napi.packets (the metrics a delta assertion reads)
// over every device (napi.polls.any.any.<context>), per device
// (<dev>.any.<context>) and per NAPI named by its queue or backlog
// (<dev>.rx-0.<context>). The NAPIs come from the last snapshot of the
// metrics group. A pair with no polls is left out, as is a NAPI named by its
// address (<role>@<address> changes from boot to boot; it counts in its
// device's figures), so the count grows with the NAPIs, not with CPUs or
// tasks. results.PollsRecorded is always kept, even at 0: it says the run
// recorded who polled, and a missing pair then reads 0 (Result.FigureValue).
func (r *record) pollFigures(out map[string]float64) {
	var text string
	found := false
	for _, s := range r.samples {
		if v, ok := s.Data.Values[wire.SourceNAPIPolls]; ok && s.Group == metricsGroup {
			text, found = v, true
		}
	}
	lines, err := metrics.ParsePolls(text)
	if !found || err != nil {
		return
	}
	napis := map[string][]string{} // device -> its NAPIs, by name
	for _, l := range lines {
		if l.Dev != "?" && !slices.Contains(napis[l.Dev], l.NAPI) {
			napis[l.Dev] = append(napis[l.Dev], l.NAPI)
		}
	}
	targets := []string{metrics.AllDevices + ".any"}
	for _, dev := range slices.Sorted(maps.Keys(napis)) {
		targets = append(targets, dev+".any")
		slices.Sort(napis[dev])
		for _, n := range napis[dev] {
			if !strings.Contains(n, "@") {
				targets = append(targets, dev+"."+n)
			}
		}
	}
	for _, target := range targets {
		for _, ctx := range metrics.PollContexts {
			name := "napi.polls." + target + "." + ctx
			polls, _, err := r.Delta(name)
			if err != nil || polls <= 0 && name != results.PollsRecorded {
				continue
			}
			out[name] = polls
			if pkts, _, err := r.Delta("napi.packets." + target + "." + ctx); err == nil {
				out["napi.packets."+target+"."+ctx] = pkts
			}
		}
	}
}
