package main

import (
	"strings"
	"testing"
	"time"

	"napilab/results"
	"napilab/results/stats"
)

// TestShowBaseline prints each figure's noise from a stored baseline, only
// the figures --metrics selects, and names the baseline that is missing.
func TestShowBaseline(t *testing.T) {
	dir := t.TempDir()
	b := &stats.Baseline{Name: "udp-flood@stock-6.1", Scenario: "udp-flood", Kernel: results.Kernel{Spec: "stock-6.1", Key: "0123456789abcdef"},
		ScenarioHash: "feed", Repeat: 4, Created: time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)}
	for run, v := range []float64{100, 102, 98, 100} {
		b.Samples = append(b.Samples, stats.Sample{Metric: "flood.rx_pps", Kernel: stats.BaselineKernel, Run: run, Value: v},
			stats.Sample{Metric: "softirqs.NET_RX per datagram", Kernel: stats.BaselineKernel, Run: run, Value: 0.5})
	}
	if _, err := stats.SaveBaseline(dir, b); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := showBaseline(&out, dir, b.Name, "rx_pps"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"udp-flood@stock-6.1: udp-flood on stock-6.1 (0123456789ab), 4 runs", "flood.rx_pps", "SMALLEST BUDGET"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "NET_RX") {
		t.Errorf("--metrics rx_pps printed NET_RX:\n%s", got)
	}
	if err := showBaseline(&out, dir, "nope", ""); err == nil || !strings.Contains(err.Error(), `no baseline "nope"`) {
		t.Errorf("missing baseline: %v", err)
	}
}
