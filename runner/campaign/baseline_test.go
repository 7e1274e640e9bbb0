package campaign

import (
	"bytes"
	"context"
	"io"
	"math"
	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/scenarios"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmallestBudget: the smallest budget is the least whole percent that
// n runs per side resolve (stats.RunsNeeded), the percent below it is not,
// and it grows with the noise.
func TestSmallestBudget(t *testing.T) {
	prev := 0.0
	for _, cv := range []float64{0.01, 0.05, 0.15} {
		tol := SmallestBudget(cv, 10)
		if stats.RunsNeeded(cv, tol, 0.05, 0.8) > 10 || stats.RunsNeeded(cv, tol-0.01, 0.05, 0.8) <= 10 {
			t.Errorf("cv %v: smallest budget %v is not the least that 10 runs resolve", cv, tol)
		}
		if tol <= prev {
			t.Errorf("cv %v: smallest budget %v, not above %v for less noise", cv, tol, prev)
		}
		prev = tol
	}
	if !math.IsNaN(SmallestBudget(math.NaN(), 10)) {
		t.Error("an unknown noise has a smallest budget")
	}
}

// TestRecord: a baseline is the figures of every run, under the default
// name <scenario>@<kernel>, with the release the guest reported, the host
// class and no path of this machine; a run that does not PASS stores none.
func TestRecord(t *testing.T) {
	s, err := scenarios.Open("../../scenarios/perf/udp-flood.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	arm := runner.Arm{Label: "stock-6.1", Tag: "r", Cfg: runner.Config{Scenario: s, Params: map[string]string{"threaded": "0"},
		Kernel: results.Kernel{Spec: "stock-6.1", Key: "0123456789abcdef", BzImage: "/cache/bzImage", Release: "6.1.0"}}}
	host := stats.Host{CPU: "fake", Cores: 2, QEMU: "9", Accel: "tcg"}
	for _, tc := range []struct {
		name string
		fail int // the run that FAILs (0: none)
		err  string
	}{
		{"all pass", 0, ""},
		{"one fails", 2, "run 2 FAIL (stall): a baseline is recorded from passing runs only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			rec := &Recorder{Repeat: 3, Out: t.TempDir(), Dir: t.TempDir(), Host: host, Log: &log,
				Interleave: func(ctx context.Context, arms []runner.Arm, dir string, from, to int, each func(runner.Arm, int, *results.Result)) (map[string][]*results.Result, error) {
					runs := map[string][]*results.Result{}
					for i := from; i <= to; i++ {
						r := &results.Result{Verdict: results.Pass, Kernel: results.Kernel{Release: "6.1.158"}, Figures: map[string]float64{"flood.rx_pps": float64(1000 + i)}}
						if i == tc.fail {
							r.Verdict, r.Reasons = results.Fail, []string{"stall"}
						}
						runs[arms[0].Label] = append(runs[arms[0].Label], r)
						each(arms[0], i, r)
					}
					return runs, nil
				}}
			b, path, dir, err := rec.Record(context.Background(), arm)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), dir) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				if bs, _ := stats.LoadBaselines(rec.Dir); len(bs) != 0 {
					t.Errorf("stored %d baselines", len(bs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name != "udp-flood@stock-6.1" || b.Kernel.Release != "6.1.158" || b.Kernel.BzImage != "" || b.Host != host ||
				b.ScenarioHash != s.MeasureHash || len(RunsOf(b)) != 3 || filepath.Dir(path) != rec.Dir || filepath.Dir(dir) != rec.Out {
				t.Errorf("baseline %+v in %s, runs in %s", b, path, dir)
			}
			if want := "run 1/3 PASS (0.0s)\nrun 2/3 PASS (0.0s)\nrun 3/3 PASS (0.0s)\n"; log.String() != want {
				t.Errorf("log %q, want %q", log.String(), want)
			}
			bs, err := stats.LoadBaselines(rec.Dir)
			if err != nil || len(bs) != 1 || len(bs[0].Samples) != 3 {
				t.Errorf("stored %v: %+v", err, bs)
			}
		})
	}
	rec := &Recorder{Name: "bad name/", Repeat: 1, Out: t.TempDir(), Dir: t.TempDir(), Log: io.Discard}
	if _, _, _, err := rec.Record(context.Background(), arm); err == nil || !strings.HasPrefix(err.Error(), "bad --name: ") {
		t.Errorf("a bad name: %v", err)
	}
}
