package runner

import (
	"syscall"
	"testing"
	"time"

	"napilab/kernels"
	"napilab/results"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchLoad runs a one-load scenario per iteration and reports the load's
// packet rates; QEMU's own CPU is not in the runner's rusage.
func benchLoad(b *testing.B, file string) (sent, received, seconds, runnerCPU float64) {
	return benchLoadWith(b, file, nil)
}

func benchLoadWith(b *testing.B, file string, edit func(*testConfig)) (sent, received, seconds, runnerCPU float64) {
	k, img := guest(b)
	for i := 0; i < b.N; i++ {
		before := cpuTime(b)
		res := runScenario(b, file, k, img, edit)
		cpu := cpuTime(b) - before
		if res.Verdict != results.Pass || len(res.Loads) != 1 {
			b.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
		}
		l := res.Loads[0]
		sent += float64(l.Sent)
		received += float64(l.Received)
		seconds += float64(len(l.PerSecond))
		runnerCPU += cpu.Seconds()
	}
	return
}

// BenchmarkHostInjector: datagrams per second the host pushes through a
// 2-queue tap, what the TCG guest takes, and sent pps per host core used by
// the runner (the injector is most of it).
func BenchmarkHostInjector(b *testing.B) {
	sent, received, secs, cpu := benchLoad(b, "testdata/bench-inject.yaml")
	b.ReportMetric(sent/secs, "sent-pps")
	b.ReportMetric(received/secs, "guest-rx-pps")
	b.ReportMetric(sent/cpu, "sent-per-host-core-second")
}

// BenchmarkGuestFlood: an in-guest UDP flood over a veth pair under TCG.
func BenchmarkGuestFlood(b *testing.B) {
	sent, received, secs, _ := benchLoad(b, "testdata/bench-guest-flood.yaml")
	b.ReportMetric(sent/secs, "sent-pps")
	b.ReportMetric(received/secs, "rx-pps")
}

// BenchmarkSamplerOverhead: the in-guest flood with and without five
// sources sampled every 100 ms; the overhead is the drop in received pps.
func BenchmarkSamplerOverhead(b *testing.B) {
	_, plain, secs, _ := benchLoad(b, "testdata/bench-guest-flood.yaml")
	_, sampled, secs2, _ := benchLoad(b, "testdata/bench-guest-flood-sampled.yaml")
	b.ReportMetric(plain/secs, "rx-pps-unsampled")
	b.ReportMetric(sampled/secs2, "rx-pps-sampled-100ms")
	b.ReportMetric(100*(1-(sampled/secs2)/(plain/secs)), "overhead-%")
}

// BenchmarkPollsOverhead: a flood through a veth NAPI with and without the
// who-polled BPF programs (sampled every 200 ms, as in every run); the
// overhead is the drop in received pps. Runs alternate to share the noise.
func BenchmarkPollsOverhead(b *testing.B) {
	var plain, polled, secs, secs2 float64
	for i := 0; i < 3; i++ {
		_, r, s, _ := benchLoadWith(b, "testdata/bench-napi-flood.yaml", func(c *testConfig) { c.NoPolls = true })
		plain, secs = plain+r, secs+s
		_, r, s, _ = benchLoadWith(b, "testdata/bench-napi-flood.yaml", nil)
		polled, secs2 = polled+r, secs2+s
	}
	b.ReportMetric(plain/secs, "rx-pps-no-bpf")
	b.ReportMetric(polled/secs2, "rx-pps-who-polled")
	b.ReportMetric(100*(1-(polled/secs2)/(plain/secs)), "overhead-%")
}

// BenchmarkDebianBoot: QEMU start to agent ready with the Debian image
// (rootfs, kselftests, agent: the kernel unpacks it all into RAM) on
// stock-6.1's kselftest flavour, and the image's size.
func BenchmarkDebianBoot(b *testing.B) {
	k, img, _ := debianGuest(b)
	boot := 0.0
	for i := 0; i < b.N; i++ {
		res := runScenario(b, "testdata/debian-smoke.yaml", k, img, func(c *testConfig) { c.MinMemoryMB = 1024 })
		if res.Verdict != results.Pass {
			b.Fatalf("verdict %s %v", res.Verdict, res.Reasons)
		}
		boot += res.Timings.Boot
	}
	b.ReportMetric(boot/float64(b.N), "boot-s")
	b.ReportMetric(float64(img.Size)/(1<<20), "image-MB")
}

// BenchmarkDebugCost: what the debug flavour (KASAN, lockdep, UBSAN,
// kmemleak) costs under TCG: boot to agent ready, the in-guest flood through
// a veth NAPI, and the run's wall time (the debug runs include kmemleak's
// scans), plain and debug runs alternating to share the noise.
func BenchmarkDebugCost(b *testing.B) {
	plain, img := guest(b)
	debug := debugGuest(b)
	type side struct{ boot, pps, total float64 }
	var sides [2]side
	runs := 3
	for i := 0; i < runs; i++ {
		for j, k := range []*kernels.Artifact{plain, debug} {
			res := runScenario(b, "testdata/bench-napi-flood.yaml", k, img, nil)
			if res.Verdict != results.Pass || len(res.Loads) != 1 {
				b.Fatalf("%s: verdict %s %v", k.Info.Spec, res.Verdict, res.Reasons)
			}
			l := res.Loads[0]
			sides[j].boot += res.Timings.Boot / float64(runs)
			sides[j].pps += float64(l.Received) / float64(len(l.PerSecond)) / float64(runs)
			sides[j].total += res.Timings.Total / float64(runs)
		}
	}
	b.ReportMetric(sides[0].boot, "plain-boot-s")
	b.ReportMetric(sides[1].boot, "debug-boot-s")
	b.ReportMetric(sides[0].pps, "plain-rx-pps")
	b.ReportMetric(sides[1].pps, "debug-rx-pps")
	b.ReportMetric(sides[0].total, "plain-run-s")
	b.ReportMetric(sides[1].total, "debug-run-s")
	b.ReportMetric(sides[1].pps/sides[0].pps, "pps-ratio")
}
