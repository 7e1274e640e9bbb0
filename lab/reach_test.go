package main

import (
	"bytes"
	"testing"

	"napilab/results"
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
