package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"napilab/results/stats"
)

// TestPerfControls runs the performance positive control: a kernel whose
// napi_complete_done raises NET_RX again after every poll (no splat, no
// stall) must FAIL the udp-flood budgets with the budget named, the
// threaded-path controls FAIL nic-flood and rps-cost in threaded mode while
// the clean series PASSes nic-flood, perf bisect name the bad patch of a
// 3-patch series, and a stored baseline stand in for side A only where it fits.
func TestPerfControls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kernel variants and boots them ~65 times")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (taps, namespaces)")
	}
	root, lab := buildLab(t)
	out, baselines := t.TempDir(), t.TempDir()
	run := func(t *testing.T, want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(lab, append(args, "-o", out)...)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("lab %s exited %d, want %d:\n%s", strings.Join(args, " "), code, want, b)
		}
		return string(b)
	}
	const scenario = "scenarios/perf/udp-flood.yaml"
	t.Run("control fails", func(t *testing.T) {
		got := run(t, exitFail, "run", scenario, "-k", "kernels/regress-napi-extra-softirq-6.1.yaml")
		if !regexp.MustCompile(`(?m)^FAIL  perf udp-flood \[softirq\] on regress-napi-extra-softirq-6\.1 against stock-6\.1`).MatchString(got) ||
			!regexp.MustCompile(`FAIL softirqs\.NET_RX per datagram \+\d+\.\d% .*budget \+10%: beyond the noise and the budget`).MatchString(got) {
			t.Errorf("want a FAIL naming the NET_RX per datagram budget:\n%s", got)
		}
	})
	// The clean series is the negative control of the threaded one below, on
	// the scenario whose threaded budgets decide (nic-flood: the kthread's
	// figures vary under 8% there, 13-29% on udp-flood).
	t.Run("clean series passes", func(t *testing.T) {
		got := run(t, exitPass, "run", "scenarios/perf/nic-flood.yaml", "-k", "kernels/threaded-napi-6.1.yaml")
		// The series is about the threaded mode (its spec's modes:): only that one runs.
		if !strings.Contains(got, "PASS  perf nic-flood [threaded] on threaded-napi-6.1 against stock-6.1") || strings.Contains(got, "[softirq] on ") {
			t.Errorf("want a PASS in threaded mode only, against stock-6.1:\n%s", got)
		}
	})
	// The threaded controls mutate the NAPI kthread's loop on top of
	// threaded-napi-6.1 (their baseline): the threaded mode must FAIL on the
	// kthread's sleeps per datagram, the softirq mode PASS without reaching
	// the changed function.
	t.Run("threaded control fails threaded only", func(t *testing.T) {
		got := run(t, exitFail, "run", "scenarios/perf/nic-flood.yaml", "-k", "kernels/regress-napi-thread-repoll-sleep-6.1.yaml")
		if !regexp.MustCompile(`(?m)^FAIL  perf nic-flood \[threaded\] on regress-napi-thread-repoll-sleep-6\.1 against threaded-napi-6\.1`).MatchString(got) ||
			!regexp.MustCompile(`napi\.sleeps per datagram .*FAIL`).MatchString(got) {
			t.Errorf("want the threaded mode to FAIL on napi.sleeps per datagram:\n%s", got)
		}
		if !regexp.MustCompile(`(?m)^PASS, not exercised  perf nic-flood \[softirq\] on regress-napi-thread-repoll-sleep-6\.1`).MatchString(got) {
			t.Errorf("want the softirq mode to PASS without reaching napi_threaded_poll:\n%s", got)
		}
	})
	// A path, not a mode of NAPI: busy polling a threaded NAPI. The control
	// backs off from it; its series is about busy-poll-threaded only.
	t.Run("busy-poll control fails on busy polls", func(t *testing.T) {
		got := run(t, exitFail, "run", "scenarios/perf/nic-flood.yaml", "-k", "kernels/regress-busy-poll-skips-threaded-6.1.yaml")
		if !regexp.MustCompile(`(?m)^FAIL  perf nic-flood \[busy-poll-threaded\] on regress-busy-poll-skips-threaded-6\.1 against stock-6\.1`).MatchString(got) ||
			!regexp.MustCompile(`FAIL napi\.polls\.any\.any\.busypoll per datagram -100\.0%`).MatchString(got) ||
			strings.Contains(got, "[threaded] on ") {
			t.Errorf("want the busy-poll-threaded mode alone, FAIL on busy polls per datagram:\n%s", got)
		}
	})
	t.Run("cost control fails on a cost figure only", func(t *testing.T) {
		got := run(t, exitFail, "run", "scenarios/perf/nic-flood.yaml", "-k", "kernels/regress-napi-thread-kick-6.1.yaml")
		if !regexp.MustCompile(`(?m)^FAIL  perf nic-flood \[threaded\] on regress-napi-thread-kick-6\.1 against threaded-napi-6\.1`).MatchString(got) ||
			!regexp.MustCompile(`softirqs\.NET_RX per datagram +\+0\.\d+ .*FAIL`).MatchString(got) || regexp.MustCompile(`rx_pps .*FAIL`).MatchString(got) {
			t.Errorf("want a FAIL on softirqs.NET_RX per datagram in the figure's units, none on the delivered rate:\n%s", got)
		}
	})
	t.Run("bisect", func(t *testing.T) {
		got := run(t, exitPass, "bisect", scenario, "--series", "patches/perf-control-series", "-k", "kernels/stock-6.1.yaml",
			"--metric", "softirqs.NET_RX per datagram")
		if !strings.Contains(got, `first bad patch: 2/3 "REGRESSION: net: napi_complete_done raises NET_RX once more after every poll"`) ||
			!regexp.MustCompile(`softirqs\.NET_RX per datagram \+\d+\.\d% \[`).MatchString(got) {
			t.Errorf("want patch 2/3 named with its change:\n%s", got)
		}
	})
	t.Run("stored baseline", func(t *testing.T) {
		got := run(t, exitPass, "baseline", "record", scenario, "-k", "kernels/stock-6.1.yaml", "-n", "5", "--baselines", baselines)
		if !strings.Contains(got, "baseline udp-flood@stock-6.1: 5 runs") {
			t.Fatalf("record:\n%s", got)
		}
		bs, err := stats.LoadBaselines(baselines)
		if err != nil || len(bs) != 1 || bs[0].Kernel.Key == "" || bs[0].Host.QEMU == "" {
			t.Fatalf("stored: %v %+v", err, bs)
		}
		// -p threaded=0 pins the softirq mode, the one the baseline was recorded in.
		got = run(t, exitFail, "run", scenario, "-k", "kernels/regress-napi-extra-softirq-6.1.yaml", "-p", "threaded=0", "--against-baseline", "--baselines", baselines)
		if !strings.Contains(got, "against stock-6.1 (stored udp-flood@stock-6.1)") || strings.Contains(got, "a-1 ") {
			t.Errorf("want side A from the stored baseline, no run of A:\n%s", got)
		}
		// Another scenario content (a parameter of the measured part): not used, and said why.
		got = run(t, exitPass, "run", scenario, "-k", "kernels/threaded-napi-6.1.yaml", "-p", "duration=4s", "--against-baseline", "--baselines", baselines)
		if !strings.Contains(got, "no fitting stored baseline") || !strings.Contains(got, "scenario changed") {
			t.Errorf("want the stored baseline refused with the reason:\n%s", got)
		}
	})
}
