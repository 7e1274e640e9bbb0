package campaign

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/scenarios"
)

// fakeArms runs perf arms without a guest: every run PASSes with the
// figures of udp-flood, side A's NET_RX per datagram 1 and B's rise times
// it, each run off by noise[i] (cycled), its rate 1000 datagrams/s.
type fakeArms struct {
	rise  float64
	noise []float64
	fail  int // B's run that FAILs (0: none)
	// calls are the runs asked for, "from-to:tags".
	calls []string
	// cover is what B's cover run reached.
	cover *results.Coverage
}

func (f *fakeArms) run(ctx context.Context, arms []runner.Arm, dir string, from, to int, each func(runner.Arm, int, *results.Result)) (map[string][]*results.Result, error) {
	var tags []string
	for _, a := range arms {
		tags = append(tags, a.Tag)
	}
	f.calls = append(f.calls, fmt.Sprintf("%02d-%02d:%s", from, to, strings.Join(tags, ",")))
	runs := map[string][]*results.Result{}
	for i := from; i <= to; i++ {
		for _, a := range arms {
			x := 1 + f.noise[(i-1)%len(f.noise)]
			if a.Tag == "b" {
				x *= f.rise
			}
			r := &results.Result{Verdict: results.Pass, Figures: map[string]float64{"softirqs.NET_RX per datagram": x, "flood.rx_pps": 1000 * (1 + f.noise[(i-1)%len(f.noise)])}}
			if a.Tag == "b" && i == f.fail {
				r.Verdict, r.Reasons = results.Fail, []string{"splat: WARNING in napi_complete_done"}
			}
			if a.Tag == "cover" {
				r.Coverage = f.cover
			}
			runs[a.Label] = append(runs[a.Label], r)
			if each != nil {
				each(a, i, r)
			}
		}
	}
	return runs, nil
}

// perfJob is udp-flood in softirq mode on threaded-napi-6.1 (side B; its
// baseline, side A, is stock-6.1, which config gives).
func perfJob(t *testing.T) (PerfJob, ConfigFunc) {
	t.Helper()
	s, err := scenarios.Open("../../scenarios/perf/udp-flood.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err = s.ForMode("softirq", nil); err != nil {
		t.Fatal(err)
	}
	b := runner.Config{Kernel: results.Kernel{Spec: "threaded-napi-6.1", Key: "kb"}, Scenario: s}
	config := func(ctx context.Context, kpath string, _ *scenarios.Scenario) (runner.Config, error) {
		return runner.Config{Kernel: results.Kernel{Spec: strings.TrimSuffix(filepath.Base(kpath), ".yaml"), Key: "ka"}}, nil
	}
	return PerfJob{Scenario: s, KPath: "../../kernels/threaded-napi-6.1.yaml", B: b}, config
}

func newFakePerf(t *testing.T, f *fakeArms, config ConfigFunc, out, log *bytes.Buffer) *Perf {
	return &Perf{Options: &RunOptions{Out: t.TempDir(), Perf: PerfOptions{Seed: 1, Baselines: t.TempDir()}}, Config: config, Out: out, Log: log,
		Modes: ModeTable{}, Interleave: f.run,
		Host: func(context.Context, string) (stats.Host, error) {
			return stats.Host{CPU: "fake", Cores: 2, QEMU: "9", Accel: "tcg"}, nil
		}}
}

// TestPerfVerdicts: the verdict comes from the budgets (PASS within them,
// FAIL past one beyond the noise), or from a run that FAILed whatever the
// numbers; a second look runs on to perf.max_repeat when the noise hides
// the answer; the verdict line, the budget table and the modes table say so.
func TestPerfVerdicts(t *testing.T) {
	steady := []float64{0.001, -0.002, 0.0015, -0.001, 0.002, -0.0005}
	noisy := []float64{0.03, -0.02, 0.025, -0.03, 0.01, -0.015, 0.02, -0.025}
	for _, tc := range []struct {
		name  string
		f     fakeArms
		want  results.Verdict
		calls []string
		lines []string // regexps out must match
	}{
		{"within budget", fakeArms{rise: 1.01, noise: steady}, results.Pass, []string{"01-06:a,b"},
			[]string{`(?m)^PASS  perf udp-flood \[softirq\] on threaded-napi-6.1 against stock-6.1 \(6 runs per side, \d+s\)$`}},
		{"past the budget", fakeArms{rise: 1.3, noise: steady}, results.Fail, []string{"01-06:a,b"},
			[]string{`(?m)^FAIL  perf udp-flood \[softirq\] on threaded-napi-6.1 against`, `softirqs.NET_RX per datagram .*FAIL`}},
		{"a run fails", fakeArms{rise: 1.0, noise: steady, fail: 3}, results.Fail, []string{"01-06:a,b"},
			[]string{`(?m)^  run b-3 on threaded-napi-6.1: FAIL splat: WARNING in napi_complete_done$`, `(?m)^FAIL  perf udp-flood`}},
		{"second look", fakeArms{rise: 1.08, noise: noisy}, results.Inconclusive, []string{"01-06:a,b", "07-12:a,b"},
			[]string{`(?m)^INCONCLUSIVE  perf udp-flood \[softirq\] on threaded-napi-6.1 against stock-6.1 \(12 runs per side`}},
		{"no second look after a FAIL", fakeArms{rise: 1.08, noise: noisy, fail: 2}, results.Fail, []string{"01-06:a,b"},
			[]string{`(?m)^FAIL  perf udp-flood \[softirq\] on threaded-napi-6.1 against stock-6.1 \(6 runs per side`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, config := perfJob(t)
			var out, log bytes.Buffer
			f := tc.f
			p := newFakePerf(t, &f, config, &out, &log)
			v, cov := p.Run(context.Background(), j)
			if v != tc.want || cov != nil {
				t.Errorf("verdict %s, coverage %v; want %s, none", v, cov, tc.want)
			}
			if strings.Join(f.calls, " ") != strings.Join(tc.calls, " ") {
				t.Errorf("runs %q, want %q", f.calls, tc.calls)
			}
			if looked := strings.Contains(log.String(), "INCONCLUSIVE at 6 runs per side, running on to 12 (perf.max_repeat)"); looked != (len(tc.calls) > 1) {
				t.Errorf("second look said %v, runs %q:\n%s", looked, f.calls, log.String())
			}
			if got := p.Modes["udp-flood on threaded-napi-6.1"]["softirq"]; !strings.HasPrefix(got, "softirq "+string(tc.want)+" (softirqs.NET_RX per datagram ") {
				t.Errorf("mode table %q", got)
			}
			for _, re := range tc.lines {
				if !regexp.MustCompile(re).MatchString(out.String()) {
					t.Errorf("output lacks %s:\n%s", re, out.String())
				}
			}
		})
	}
}

// TestPerfSideA: a stored baseline that fits stands for side A (no run of
// A); one that does not fit is an ERROR saying why; a kernel that extends
// no spec, or whose baseline builds the same kernel, is a SKIP; B's cover
// run comes after the measured runs and its coverage is returned.
func TestPerfSideA(t *testing.T) {
	steady := []float64{0.001, -0.002, 0.0015, -0.001, 0.002, -0.0005}
	t.Run("stored", func(t *testing.T) {
		j, config := perfJob(t)
		j.Scenario.Perf.Baseline = "udp-flood@stock-6.1"
		var out, log bytes.Buffer
		f := &fakeArms{rise: 1.01, noise: steady}
		p := newFakePerf(t, f, config, &out, &log)
		host, _ := p.Host(context.Background(), "")
		b := &stats.Baseline{Name: "udp-flood@stock-6.1", Scenario: "udp-flood", Kernel: results.Kernel{Spec: "stock-6.1", Key: "ka"},
			ScenarioHash: j.Scenario.MeasureHash, Host: host, Repeat: 6}
		for i, x := range steady {
			b.Samples = append(b.Samples, stats.Sample{Metric: "softirqs.NET_RX per datagram", Kernel: stats.BaselineKernel, Run: i + 1, Value: 1 + x},
				stats.Sample{Metric: "flood.rx_pps", Kernel: stats.BaselineKernel, Run: i + 1, Value: 1000 * (1 + x)})
		}
		if _, err := stats.SaveBaseline(p.Options.Perf.Baselines, b); err != nil {
			t.Fatal(err)
		}
		if v, _ := p.Run(context.Background(), j); v != results.Pass || strings.Join(f.calls, " ") != "01-06:b" ||
			!strings.Contains(out.String(), "PASS  perf udp-flood [softirq] on threaded-napi-6.1 against stock-6.1 (stored udp-flood@stock-6.1) (6 runs per side") {
			t.Errorf("verdict %s, runs %q:\n%s", v, f.calls, out.String())
		}
		// Another host class: the baseline does not fit.
		out.Reset()
		p.Host = func(context.Context, string) (stats.Host, error) {
			return stats.Host{CPU: "other", Cores: 2, QEMU: "9", Accel: "tcg"}, nil
		}
		if v, _ := p.Run(context.Background(), j); v != results.Error ||
			!strings.HasPrefix(out.String(), "ERROR  perf udp-flood [softirq] on threaded-napi-6.1: perf.baseline udp-flood@stock-6.1 does not fit: ") {
			t.Errorf("verdict %s:\n%s", v, out.String())
		}
	})
	t.Run("own baseline", func(t *testing.T) {
		j, config := perfJob(t)
		var out, log bytes.Buffer
		f := &fakeArms{rise: 1, noise: steady}
		p := newFakePerf(t, f, config, &out, &log)
		j.B.Kernel.Key = "ka" // what stock-6.1 builds as
		if v, _ := p.Run(context.Background(), j); v != results.Pass || len(f.calls) != 0 ||
			out.String() != "SKIP  perf udp-flood [softirq] on threaded-napi-6.1: the kernel is its own baseline (../../kernels/stock-6.1.yaml has the same content key)\n" {
			t.Errorf("verdict %s, runs %q: %q", v, f.calls, out.String())
		}
		out.Reset()
		j.KPath = "../../kernels/stock-6.1.yaml"
		if v, _ := p.Run(context.Background(), j); v != results.Pass || len(f.calls) != 0 ||
			!strings.HasPrefix(out.String(), "SKIP  perf udp-flood [softirq] on threaded-napi-6.1: the kernel is its own baseline: stock-6.1 extends no spec") {
			t.Errorf("verdict %s, runs %q: %q", v, f.calls, out.String())
		}
	})
	t.Run("coverage", func(t *testing.T) {
		j, config := perfJob(t)
		j.B.Cover = []results.CoverFunc{{Func: "napi_complete_done", Probes: []string{"napi_complete_done"}}}
		var out, log bytes.Buffer
		f := &fakeArms{rise: 1.01, noise: steady, cover: &results.Coverage{Funcs: []results.FuncCalls{{CoverFunc: j.B.Cover[0], Calls: 0}}}}
		p := newFakePerf(t, f, config, &out, &log)
		v, cov := p.Run(context.Background(), j)
		if v != results.Pass || cov != f.cover || strings.Join(f.calls, " ") != "01-06:a,b 07-07:cover" ||
			!strings.Contains(out.String(), "PASS, not exercised  perf udp-flood") || !strings.Contains(out.String(), "  series functions called: napi_complete_done 0\n") {
			t.Errorf("verdict %s, coverage %v, runs %q:\n%s", v, cov, f.calls, out.String())
		}
	})
}
