package main

import (
	"bytes"
	"testing"

	"napilab/results"
	"napilab/results/stats"
)

func TestReach(t *testing.T) {
	rc := reach{}
	cov := func(calls ...uint64) *results.Coverage {
		c := &results.Coverage{}
		for i, n := range calls {
			c.Funcs = append(c.Funcs, results.FuncCalls{CoverFunc: results.CoverFunc{Func: []string{"a", "b", "c"}[i], Probes: []string{"x"}}, Calls: n})
		}
		return c
	}
	rc.add("k", cov(0, 3, 0))
	rc.add("k", cov(0, 0, 2))
	partial := cov(5, 5, 5)
	partial.Partial = true
	rc.add("k", partial) // a run read early says nothing of what never ran
	rc.add("other", cov(1, 1, 1))
	rc.add("none", nil)
	var b bytes.Buffer
	rc.print(&b)
	if want := "NOTE  k: no run reached one of its series' functions: a\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}

func TestModeTable(t *testing.T) {
	mt := modeTable{}
	pc := func(ratio float64) *stats.PerfCheck {
		return &stats.PerfCheck{Budgets: []stats.BudgetResult{{Budget: stats.Budget{Metric: "x.rx_pps"}, Row: stats.CompareRow{Ratio: ratio}}}}
	}
	mt.add("nic-flood", "k", "threaded", results.Fail, pc(0.652))
	mt.add("nic-flood", "k", "softirq", results.Pass, pc(1.013))
	mt.add("udp-flood", "k", "threaded", results.Pass, pc(1)) // one mode: nothing to put beside it
	mt.add("rps-cost", "k", "", results.Pass, pc(1))          // no modes
	var b bytes.Buffer
	mt.print(&b)
	want := "MODES  perf nic-flood on k: softirq PASS (x.rx_pps +1.3%) | threaded FAIL (x.rx_pps -34.8%)\n"
	if b.String() != want {
		t.Errorf("printed %q\nwant    %q", b.String(), want)
	}
}
