package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

// ksOutput is what run_kselftest.sh prints for net:x.sh ending with result.
func ksOutput(result string) wire.ExecResult {
	return wire.ExecResult{Stdout: "TAP version 13\n1..1\n# timeout set to 45\n# selftests: net: x.sh\n# send: Connection refused\n" + result + "\n"}
}

var (
	ksPass = ksOutput("ok 1 selftests: net: x.sh")
	ksFail = ksOutput("not ok 1 selftests: net: x.sh # exit=1")
	ksSkip = ksOutput("ok 1 selftests: net: x.sh # SKIP")
)

// TestKselftestRetry: a failed kselftest runs again in the same guest; a
// pass on retry is flaky (not a failure unless strict), both outputs kept.
func TestKselftestRetry(t *testing.T) {
	known := []knownFlaky{{Test: "net:x.sh", Kernels: []string{"stock-6.12"}, Reason: "starved sender", Date: "2026-12-01", Retries: 3}}
	for _, tc := range []struct {
		name     string
		answers  []wire.ExecResult // per attempt; the last repeats
		retries  int
		spec     string // the kernel spec, for the known-flaky list
		strict   bool
		status   string
		attempts int // runs of the test
		flaky    bool
		failed   bool
		known    string
	}{
		{name: "pass needs no retry", answers: []wire.ExecResult{ksPass}, retries: 1, status: results.KPass, attempts: 1},
		{name: "fail then pass is flaky", answers: []wire.ExecResult{ksFail, ksPass}, retries: 1,
			status: results.KPass, attempts: 2, flaky: true},
		{name: "strict makes a flake fail", answers: []wire.ExecResult{ksFail, ksPass}, retries: 1, strict: true,
			status: results.KPass, attempts: 2, flaky: true, failed: true},
		{name: "failing every attempt is a FAIL", answers: []wire.ExecResult{ksFail}, retries: 1,
			status: results.KFail, attempts: 2, failed: true},
		{name: "no retries", answers: []wire.ExecResult{ksFail, ksPass}, retries: 0,
			status: results.KFail, attempts: 1, failed: true},
		{name: "a skip on retry is no pass", answers: []wire.ExecResult{ksFail, ksSkip}, retries: 1,
			status: results.KFail, attempts: 2, failed: true},
		{name: "known flaky gets more attempts", answers: []wire.ExecResult{ksFail, ksFail, ksFail, ksPass}, retries: 1,
			spec: "stock-6.12", status: results.KPass, attempts: 4, flaky: true, known: "starved sender"},
		{name: "known flaky only on its kernels", answers: []wire.ExecResult{ksFail, ksFail, ksPass}, retries: 1,
			spec: "stock-6.1", status: results.KFail, attempts: 2, failed: true},
		{name: "known flaky never retries when retries are off", answers: []wire.ExecResult{ksFail, ksPass}, retries: 0,
			spec: "stock-6.12", status: results.KFail, attempts: 1, failed: true, known: "starved sender"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			ctl := fakeExecAgent(t, func(n int) (wire.ExecResult, string) {
				runs = n
				return tc.answers[min(n, len(tc.answers))-1], ""
			})
			tl := newTimeline(&scenarios.Scenario{}, 1, ctl, nil, t.Logf)
			tl.outDir, tl.ks.retries, tl.ks.strict, tl.ks.spec, tl.ks.known = t.TempDir(), tc.retries, tc.strict, tc.spec, known
			if err := tl.kselftest(context.Background(), &scenarios.Step{Name: "ks"}, "net:x.sh"); err != nil {
				t.Fatal(err)
			}
			k := tl.ks.results[0]
			if runs != tc.attempts {
				t.Errorf("ran %d times, want %d", runs, tc.attempts)
			}
			if k.Status != tc.status || k.Flaky() != tc.flaky || k.Failed() != tc.failed || k.KnownFlaky != tc.known {
				t.Errorf("status %s flaky %v failed %v known %q, want %s %v %v %q", k.Status, k.Flaky(), k.Failed(), k.KnownFlaky, tc.status, tc.flaky, tc.failed, tc.known)
			}
			if got := len(kselftestReasons(tl.ks.results)) > 0; got != tc.failed {
				t.Errorf("verdict reasons %q, want some: %v", kselftestReasons(tl.ks.results), tc.failed)
			}
			// Every attempt's output is kept in its own file.
			if tc.attempts > 1 && len(k.Attempts) != tc.attempts {
				t.Fatalf("attempts %+v, want %d", k.Attempts, tc.attempts)
			}
			for i, a := range k.Attempts {
				want := filepath.Join("kselftests", kselftestLogName("net:x.sh", i))
				b, err := os.ReadFile(filepath.Join(tl.outDir, a.File))
				if a.File != want || err != nil || !strings.Contains(string(b), "selftests: net: x.sh") {
					t.Errorf("attempt %d: file %q (want %q): %v %q", i+1, a.File, want, err, b)
				}
			}
			if tc.failed && !tc.flaky && tc.attempts > 1 && !strings.Contains(k.ReasonLine(), fmt.Sprintf("on each of %d attempts", tc.attempts)) {
				t.Errorf("reason %q does not count the attempts", k.ReasonLine())
			}
			if tc.flaky && !strings.Contains(k.FlakyLine(), "fail exit=1, then pass") {
				t.Errorf("flaky line %q", k.FlakyLine())
			}
		})
	}
}

// TestKselftestBudget: the step deadline covers every attempt.
func TestKselftestBudget(t *testing.T) {
	tl := newTimeline(&scenarios.Scenario{}, 1, nil, nil, t.Logf)
	tl.ks.timeouts = map[string]time.Duration{"net": 10 * time.Second}
	tl.ks.known = []knownFlaky{{Test: "net:k.sh", Kernels: []string{"all"}, Reason: "r", Date: "2026-12-01", Retries: 2}}
	one := 10*time.Second + kselftestSlack
	for _, tc := range []struct {
		name    string
		retries int
		want    time.Duration
	}{{"net:x.sh", 0, one}, {"net:x.sh", 1, 2 * one}, {"net:k.sh", 1, 3 * one}, {"net:k.sh", 0, one}} {
		tl.ks.retries = tc.retries
		if got := tl.kselftestBudget(tc.name); got != tc.want {
			t.Errorf("%s with %d retries: %v, want %v", tc.name, tc.retries, got, tc.want)
		}
	}
}

// TestKnownFlakyFile: the shipped list parses and every entry is complete;
// bad entries are named by file and line.
func TestKnownFlakyFile(t *testing.T) {
	l, err := parseKnownFlaky(knownFlakyName, knownFlakyFile)
	if err != nil || len(l) == 0 {
		t.Fatalf("%v, %d entries", err, len(l))
	}
	if _, ok := lookupKnownFlaky(l, "net:msg_zerocopy.sh", "stock-6.12"); !ok {
		t.Error("net:msg_zerocopy.sh is not known flaky on stock-6.12")
	}
	bad := `- test: net:ok.sh
  kernels: [all]
  reason: r
  date: 2026-12-01
  retries: 1
- test: nocolon
  kernels: [all]
  reason: r
  date: 2026-12-01
  retries: 1
- test: net:a.sh
  kernels: [all]
  date: 2026-12-01
  retries: 1
- test: net:b.sh
  kernels: [all]
  reason: r
  date: yesterday
  retries: 1
- test: net:c.sh
  kernels: []
  reason: r
  date: 2026-12-01
  retries: 1
`
	_, err = parseKnownFlaky("k.yaml", []byte(bad))
	if err == nil {
		t.Fatal("bad list accepted")
	}
	for _, want := range []string{"k.yaml:6: nocolon: bad test", "k.yaml:11: net:a.sh: no reason", "k.yaml:15: net:b.sh: bad date", "k.yaml:20: net:c.sh: no kernels"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "net:ok.sh") {
		t.Errorf("good entry reported: %v", err)
	}
}
