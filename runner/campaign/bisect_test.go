package campaign

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"napilab/images"
	"napilab/kernels"
	"napilab/patches"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// TestSearchSeries: over the prefixes of a 9-patch series, a fake test that
// is bad from a known first bad patch on (and skips the prefixes that do
// not build) is found in about log2 steps, the ends probed first, each step
// logged; a skipped culprit leaves a range.
func TestSearchSeries(t *testing.T) {
	series := &patches.Series{}
	for i := 1; i <= 9; i++ {
		series.Patches = append(series.Patches, patches.Patch{Subject: fmt.Sprintf("net: change %d", i), Author: "A <a@x>"})
	}
	c := seriesCandidates{series}
	for _, tc := range []struct {
		first int
		skip  []int
		want  string
	}{
		{5, nil, "first bad patch: 5/9 \"net: change 5\" by A <a@x>\n"},
		{1, nil, "first bad patch: 1/9 \"net: change 1\" by A <a@x>\n"},
		{9, []int{4, 7}, "first bad patch: 9/9 \"net: change 9\" by A <a@x>\nskipped (did not build or boot): patches 1..4, 1..7\n"},
		{5, []int{5}, "first bad patch: one of 5..6 of 9 (the prefixes between could not be tested):\n" +
			"  5/9 \"net: change 5\" by A <a@x>\n  6/9 \"net: change 6\" by A <a@x>\nskipped (did not build or boot): patches 1..5\n"},
	} {
		t.Run(fmt.Sprintf("first %d skip %v", tc.first, tc.skip), func(t *testing.T) {
			var probed []int
			test := func(k int) (runner.Outcome, error) {
				probed = append(probed, k)
				for _, s := range tc.skip {
					if k == s {
						return runner.Skip, nil
					}
				}
				if k >= tc.first {
					return runner.Bad, nil
				}
				return runner.Good, nil
			}
			var out, log bytes.Buffer
			res, err := search(c, "series", 3, test, &out, &log)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("answer:\n%s\nwant:\n%s", out.String(), tc.want)
			}
			if probed[0] != 9 || probed[1] != 0 || len(probed) > 2+4+len(tc.skip) {
				t.Errorf("probed %v: want the bad end, the good end, then about log2(9) more", probed)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != len(probed) || lines[0] != "patches 1..9: bad" || lines[1] != "patches 1..0: good" {
				t.Errorf("log:\n%s", log.String())
			}
			if tc.skip == nil && (res.First != tc.first || res.Last != tc.first) {
				t.Errorf("result %+v, want %d", res, tc.first)
			}
		})
	}
}

// TestBisectorRuns: a candidate is bad at its first FAIL (no more runs),
// skipped when its kernel does not boot, good after Runs passes; a lab
// ERROR stops the bisect.
func TestBisectorRuns(t *testing.T) {
	s, err := scenarios.Open("../../scenarios/napi-disable-race.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		results []*results.Result // by run; PASS after the last
		want    runner.Outcome
		runs    int
		err     string
	}{
		{"passes", nil, runner.Good, 4, ""},
		{"fails third", []*results.Result{pass(), pass(), {Verdict: results.Fail, Timings: results.Timings{Boot: 1}}}, runner.Bad, 3, ""},
		{"does not boot", []*results.Result{{Verdict: results.Fail}}, runner.Skip, 1, ""},
		{"lab error", []*results.Result{pass(), {Verdict: results.Error, Reasons: []string{"no taps"}}}, runner.Good, 2, "lab error with k3: [no taps]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			var dirs []string
			b := &Bisector{Scenario: s, Runs: 4, Log: &log, out: "/bisect", img: &images.Image{Path: "agent.cpio"},
				Run: func(ctx context.Context, cfg runner.Config) *results.Result {
					dirs = append(dirs, cfg.OutDir)
					if len(dirs) <= len(tc.results) {
						return tc.results[len(dirs)-1]
					}
					return pass()
				}}
			oc, err := b.runs(context.Background(), "k3", "k3", &kernels.Spec{Name: "stock-6.1"}, &kernels.Artifact{})
			if oc != tc.want || len(dirs) != tc.runs || b.runsUsed != tc.runs || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
				t.Errorf("%s after %d runs (%d counted), err %v; want %s after %d, err %q\n%s", oc, len(dirs), b.runsUsed, err, tc.want, tc.runs, tc.err, log.String())
			}
			if dirs[0] != "/bisect/k3-run1" {
				t.Errorf("first run in %s", dirs[0])
			}
		})
	}
}

func pass() *results.Result {
	return &results.Result{Verdict: results.Pass, Timings: results.Timings{Boot: 1}}
}
