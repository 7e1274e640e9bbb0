package runner

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"napilab/results"
	"napilab/runner/vm"
)

// benchBootSleep is testdata/bench-boot.yaml's one step: the run's declared
// duration.
const benchBootSleep = 2 * time.Second

// benchMachines are the machines BenchmarkBoot compares:
// $NAPILAB_BENCH_MACHINES (space separated), else every machine.
func benchMachines(b *testing.B) []string {
	names := strings.Fields(os.Getenv("NAPILAB_BENCH_MACHINES"))
	if len(names) == 0 {
		return vm.MachineNames()
	}
	for _, n := range names {
		if _, err := vm.PickMachine(n); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

// benchBoots is how many boots each machine gets per iteration:
// $NAPILAB_BENCH_BOOTS, else 10.
func benchBoots(b *testing.B) int {
	s := os.Getenv("NAPILAB_BENCH_BOOTS")
	if s == "" {
		return 10
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("NAPILAB_BENCH_BOOTS=%q: want a count >= 1", s)
	}
	return n
}

// spread returns the minimum, median and maximum of v (not empty).
func spread(v []float64) (lo, median, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], median, s[len(s)-1]
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name        string
		v           []float64
		lo, med, hi float64
	}{
		{"one", []float64{1.5}, 1.5, 1.5, 1.5},
		{"odd, unsorted", []float64{3, 1, 2}, 1, 2, 3},
		{"even: the middle two's mean", []float64{4, 1, 3, 2}, 1, 2.5, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, med, hi := spread(tc.v)
			if lo != tc.lo || med != tc.med || hi != tc.hi {
				t.Errorf("spread(%v) = %v %v %v, want %v %v %v", tc.v, lo, med, hi, tc.lo, tc.med, tc.hi)
			}
		})
	}
}

// hostLoad is the 1-minute load average, or -1.
func hostLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return -1
	}
	return f
}

// BenchmarkBoot: QEMU start to agent ready on stock-6.1 (2 vCPUs, TCG, one
// 2-queue NIC), min/median/max per machine, the machines interleaved
// (A B A B) so host load hits them alike; load1 is the host's load average
// over the runs. Issue 18's goal: a median <= 1.0 s on the default machine.
func BenchmarkBoot(b *testing.B) {
	k, img := guest(b)
	names := benchMachines(b)
	boots := map[string][]float64{}
	phases := map[string][]*results.BootPhases{}
	var load float64
	runs := b.N * benchBoots(b)
	for i := 0; i < runs; i++ {
		for _, m := range names {
			res := runScenario(b, "testdata/bench-boot.yaml", k, img, func(c *testConfig) { c.Machine = m })
			if res.Verdict != results.Pass {
				b.Fatalf("%s: verdict %s %v", m, res.Verdict, res.Reasons)
			}
			boots[m] = append(boots[m], res.Timings.Boot)
			phases[m] = append(phases[m], res.Timings.BootPhases)
			load += hostLoad() / float64(runs*len(names))
		}
	}
	for _, m := range names {
		lo, med, hi := spread(boots[m])
		b.ReportMetric(lo, m+"-min-s")
		b.ReportMetric(med, m+"-median-s")
		b.ReportMetric(hi, m+"-max-s")
		reportPhases(b, m, phases[m])
	}
	b.ReportMetric(load, "load1")
}

// reportPhases reports the median of each boot phase (results.BootPhases)
// over the boots that have them.
func reportPhases(b *testing.B, machine string, ps []*results.BootPhases) {
	var before, kernel, agent, runtime []float64
	for _, p := range ps {
		if p != nil {
			before, kernel = append(before, p.Before), append(kernel, p.Kernel)
			agent, runtime = append(agent, p.Agent), append(runtime, p.Runtime)
		}
	}
	if len(before) == 0 {
		return
	}
	for _, m := range []struct {
		name string
		v    []float64
	}{{"before-kernel", before}, {"kernel", kernel}, {"agent", agent}, {"agent-runtime", runtime}} {
		_, med, _ := spread(m.v)
		b.ReportMetric(med, machine+"-"+m.name+"-median-s")
	}
}

// BenchmarkScenarioOverhead: what a run costs beyond its declared duration
// (the tiny bench-boot scenario on the default machine): boot, the
// timeline's own overhead, and setup plus teardown (taps, topology,
// evidence, power off), medians over the boots.
func BenchmarkScenarioOverhead(b *testing.B) {
	k, img := guest(b)
	declared := benchBootSleep.Seconds()
	var total, boot, timeline, rest []float64
	for i := 0; i < b.N*benchBoots(b); i++ {
		res := runScenario(b, "testdata/bench-boot.yaml", k, img, nil)
		if res.Verdict != results.Pass {
			b.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
		}
		t := res.Timings
		total = append(total, t.Total-declared)
		boot = append(boot, t.Boot)
		timeline = append(timeline, t.Timeline-declared)
		rest = append(rest, t.Total-t.Boot-t.Timeline)
	}
	for _, m := range []struct {
		unit string
		v    []float64
	}{{"overhead-s", total}, {"boot-s", boot}, {"timeline-overhead-s", timeline}, {"setup-teardown-s", rest}} {
		_, med, _ := spread(m.v)
		b.ReportMetric(med, m.unit)
	}
	b.ReportMetric(hostLoad(), "load1")
}
