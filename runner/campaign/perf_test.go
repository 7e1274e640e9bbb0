package campaign

import (
	"bytes"
	"errors"
	"napilab/results"
	"napilab/results/stats"
	"napilab/scenarios"
	"path/filepath"
	"strings"
	"testing"
)

func TestBaselineKernel(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	open := func(baseline string) *scenarios.Scenario {
		t.Helper()
		s, err := scenarios.Open(filepath.Join(root, "scenarios/perf/udp-flood.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Perf.Baseline = baseline
		return s
	}
	series := filepath.Join(root, "kernels/threaded-napi-6.1.yaml")
	stock := filepath.Join(root, "kernels/stock-6.1.yaml")
	for _, tc := range []struct {
		baseline, kernel string
		spec, stored     string
		err              string
	}{
		{"base", series, stock, "", ""},
		{"", series, stock, "", ""},
		{"base", stock, "", "", "the kernel is its own baseline: stock-6.1 extends no spec"},
		{"kernels/stock-6.12.yaml", series, filepath.Join(root, "kernels/stock-6.12.yaml"), "", ""}, // from the project's top
		{"kernels/nope.yaml", series, "", "", "no such kernel spec"},
		{"udp-flood@stock-6.1", series, "", "udp-flood@stock-6.1", ""},
	} {
		spec, stored, err := baselineKernel(open(tc.baseline), tc.kernel)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("baseline %q of %s: err %v, want %q", tc.baseline, tc.kernel, err, tc.err)
			}
			continue
		}
		if err != nil || spec != tc.spec || stored != tc.stored {
			t.Errorf("baseline %q of %s: %q, %q, %v; want %q, %q", tc.baseline, tc.kernel, spec, stored, err, tc.spec, tc.stored)
		}
	}
	if _, _, err := baselineKernel(open("base"), stock); !errors.Is(err, errOwnBaseline) {
		t.Errorf("a base kernel's own baseline: %v, want errOwnBaseline", err)
	}
}

func TestSecondLook(t *testing.T) {
	check := func(v results.Verdict, needed ...int) *stats.PerfCheck {
		pc := &stats.PerfCheck{Verdict: v}
		for _, n := range needed {
			bv := results.Pass
			if n > 0 {
				bv = results.Inconclusive
			}
			pc.Budgets = append(pc.Budgets, stats.BudgetResult{Verdict: bv, Needed: n})
		}
		return pc
	}
	for _, tc := range []struct {
		name string
		pc   *stats.PerfCheck
		max  int
		want int
	}{
		{"decided", check(results.Pass, 0, 0), 12, 6},
		{"failed", check(results.Fail, 0), 12, 6},
		{"undecided, decidable", check(results.Inconclusive, 0, 5), 12, 12},
		{"undecided, one decidable", check(results.Inconclusive, 40, 9), 12, 12},
		{"undecided beyond max_repeat", check(results.Inconclusive, 40), 12, 6},
		{"second look off", check(results.Inconclusive, 5), 6, 6},
	} {
		if got := secondLook(tc.pc, 6, tc.max); got != tc.want {
			t.Errorf("%s: secondLook = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestModeTable(t *testing.T) {
	mt := ModeTable{}
	pc := func(ratio float64) *stats.PerfCheck {
		return &stats.PerfCheck{Budgets: []stats.BudgetResult{{Budget: stats.Budget{Metric: "x.rx_pps"}, Row: stats.CompareRow{Ratio: ratio}}}}
	}
	mt.add("nic-flood", "k", "threaded", results.Fail, pc(0.652))
	mt.add("nic-flood", "k", "softirq", results.Pass, pc(1.013))
	mt.add("udp-flood", "k", "threaded", results.Pass, pc(1)) // one mode: nothing to put beside it
	mt.add("rps-cost", "k", "", results.Pass, pc(1))          // no modes
	var b bytes.Buffer
	mt.Print(&b)
	want := "MODES  perf nic-flood on k: softirq PASS (x.rx_pps +1.3%) | threaded FAIL (x.rx_pps -34.8%)\n"
	if b.String() != want {
		t.Errorf("printed %q\nwant    %q", b.String(), want)
	}
}
