package runner

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"napilab/internal/wire"
	"napilab/results"
)

// TestVerdictUnmeasured checks that an assertion the lab could not measure
// makes the run an ERROR on its own, and never hides a kernel's failure.
func TestVerdictUnmeasured(t *testing.T) {
	const asserts = `  - name: polled during flip
    during: {step: flip}
    polls: {napi: vrx/rx-0, context: kthread, min: 1}
  - name: no softirq polls while warming up
    during: {step: warm}
    polls: {napi: vrx/rx-0, context: softirq, max: 0}
`
	flip := []at{{1.0, 0, 5}, {1.4, 8, 5}}   // flip measured, kthread polled
	warmOK := []at{{0, 0, 5}, {0.99, 0, 5}}  // warm measured, no softirq polls
	warmBad := []at{{0, 0, 0}, {0.99, 0, 5}} // warm measured, softirq polled
	one := []at{{0.5, 0, 0}}                 // neither measured
	for _, tc := range []struct {
		name    string
		snaps   []at
		err     error
		verdict results.Verdict
		reasons []string // the start of each reason
	}{
		{"measured and in bounds", append(flip, warmOK...), nil, results.Pass, nil},
		{"an unmeasured assertion alone", append(warmOK, at{2.4, 0, 5}), nil, results.Error,
			[]string{"polled during flip: measured one snapshot"}},
		{"both unmeasured", one, nil, results.Error,
			[]string{"polled during flip: measured one snapshot", "no softirq polls while warming up: measured one snapshot"}},
		{"an unmeasured assertion beside a failing one", append(warmBad, at{2.4, 0, 5}), nil, results.Fail,
			[]string{"polled during flip: measured one snapshot", "no softirq polls while warming up: measured 5 in 0.00-1.00s"}},
		{"a failing assertion alone", append(flip, warmBad...), nil, results.Fail,
			[]string{"no softirq polls while warming up: measured 5"}},
		{"a step the kernel refused", nil, &stepError{step: "flip", line: 9, err: &guestError{Kind: wire.KindErrno, Errno: syscall.EINVAL, Msg: "write: EINVAL"}},
			results.Fail, []string{`step "flip" (line 9) failed: write: EINVAL`}},
		{"a step error of the lab's", nil, &stepError{step: "flip", line: 9, err: errors.New("load a is not running")}, results.Error,
			[]string{`step "flip" (line 9) failed: load a is not running`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := windowScenario(t, asserts)
			r := &run{cfg: Config{OutDir: t.TempDir()}, s: s, res: &results.Result{}, tl: windowTimeline(s, tc.snaps...)}
			r.finish(tc.err)
			if r.res.Verdict != tc.verdict || len(r.res.Reasons) != len(tc.reasons) {
				t.Fatalf("verdict %s, reasons %q; want %s with %d reasons", r.res.Verdict, r.res.Reasons, tc.verdict, len(tc.reasons))
			}
			for i, want := range tc.reasons {
				if !strings.HasPrefix(r.res.Reasons[i], want) {
					t.Errorf("reason %d %q, want %q...", i, r.res.Reasons[i], want)
				}
			}
		})
	}
}
