package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/results"
)

var update = flag.Bool("update", false, "rewrite golden files")

// reportFixture reads a result.json under testdata/report.
func reportFixture(t *testing.T, dir string) (*results.Result, []results.SampleLine) {
	t.Helper()
	r, samples, err := results.LoadRun(filepath.Join("testdata", "report", dir))
	if err != nil {
		t.Fatal(err)
	}
	return r, samples
}

// TestKTAPGolden renders the fixtures and compares them with the .ktap
// golden files beside them; -update rewrites those.
func TestKTAPGolden(t *testing.T) {
	for _, dir := range []string{".", "load"} {
		t.Run(dir, func(t *testing.T) {
			r, _ := reportFixture(t, dir)
			var b bytes.Buffer
			if err := WriteKTAP(&b, r); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "report", dir, KTAPFile)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("KTAP differs from %s (-update rewrites it):\n%s", golden, got)
			}
		})
	}
}

func TestKTAPCases(t *testing.T) {
	started := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    results.Result
		want []string // lines that must appear, in order
		none []string // substrings that must not appear
	}{
		{
			name: "pass",
			r: results.Result{Scenario: "s", Verdict: results.Pass, Started: started, Kernel: results.Kernel{Spec: "k", Release: "6.1.1"},
				Asserts: []results.Assert{{Name: "a", Passed: true, Measured: "1", Bound: ">= 1"}}},
			want: []string{"KTAP version 1", "1..1", "# napilab s on k (6.1.1)", "# verdict PASS", "ok 1 a",
				"# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"},
			none: []string{"not ok", "# reason"},
		},
		{
			name: "lab error and hang come first",
			r: results.Result{Scenario: "s", Verdict: results.Error, Reasons: []string{"boot: timeout"},
				Hang:    &results.Hang{Step: "toggle", Line: 7, Deadline: "10s", Function: "napi_disable"},
				Asserts: []results.Assert{{Name: "b", Passed: false, Measured: "0", Bound: ">= 1", Detail: "first\nsecond"}}},
			want: []string{"1..3", "# reason: boot: timeout", "not ok 1 infrastructure # error: boot: timeout",
				`not ok 2 no hang # step "toggle" (line 7) did not finish within 10s`, "# stuck in napi_disable",
				"not ok 3 b # measured 0, want >= 1", "# first", "# second",
				// The hang of an ERROR run is not pinned on the kernel: an error.
				"# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:2"},
		},
		{
			name: "names stay on one line without directives",
			r: results.Result{Scenario: "s", Verdict: results.Fail,
				Asserts: []results.Assert{{Name: "x # SKIP\ny", Passed: false, Measured: "a\nb", Bound: "c"}}},
			want: []string{"not ok 1 x _ SKIP y # measured a b, want c"},
			none: []string{"# SKIP"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteKTAP(&b, &tc.r); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			lines := strings.Split(out, "\n")
			at := 0
			for _, w := range tc.want {
				for at < len(lines) && lines[at] != w {
					at++
				}
				if at == len(lines) {
					t.Fatalf("missing line (or out of order) %q in\n%s", w, out)
				}
			}
			for _, n := range tc.none {
				if strings.Contains(out, n) {
					t.Errorf("unexpected %q in\n%s", n, out)
				}
			}
			// Every line is a version, plan, test or diagnostic line.
			for _, l := range lines[:len(lines)-1] {
				if !(strings.HasPrefix(l, "KTAP version ") || strings.HasPrefix(l, "1..") ||
					strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "not ok ") || strings.HasPrefix(l, "#")) {
					t.Errorf("stray line %q", l)
				}
			}
		})
	}
}
