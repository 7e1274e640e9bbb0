package results

import (
	"fmt"
	"strings"
)

// A failure that goes away when the same thing runs again is a flake: the
// lab retries a failed kselftest in the same guest, and a run that failed
// only on timing-only assertions once more on the same kernel. A flake is
// reported (never dropped) and is not a kernel FAIL unless the run is strict.

// Attempt is one run of a kselftest that was retried.
type Attempt struct {
	Status  string  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds"`
	// File is the attempt's output, relative to the run folder.
	File string `json:"file,omitempty"`
}

// Retry is the failed run a run repeated.
type Retry struct {
	// Dir is the failed run's folder.
	Dir string `json:"dir"`
	// Failed are its failed assertions (all timing-only).
	Failed []Assert `json:"failed"`
}

// Reasons say why the retried run failed, one line per assertion.
func (r *Retry) Reasons() []string {
	var out []string
	for _, a := range r.Failed {
		out = append(out, a.Reason())
	}
	return out
}

// FailedFirst is the outcome of the assertion name in the run r retried,
// if it failed there.
func (r *Retry) FailedFirst(name string) (Assert, bool) {
	if r != nil {
		for _, a := range r.Failed {
			if a.Name == name {
				return a, true
			}
		}
	}
	return Assert{}, false
}

// Flaky reports whether the test failed and then passed on a retry.
func (k Kselftest) Flaky() bool {
	return len(k.Attempts) > 1 && (k.Status == KPass || k.Status == KXfail)
}

func isFailStatus(s string) bool {
	return s == KFail || s == KTimeout || s == KError
}

// FlakyLine says how a flaky test went, e.g. "kselftest net:x: flaky (fail
// exit=1, then pass; known flaky: ...)".
func (k Kselftest) FlakyLine() string {
	var steps []string
	for _, a := range k.Attempts {
		s := a.Status
		if a.Reason != "" && isFailStatus(a.Status) {
			s += " " + a.Reason
		}
		steps = append(steps, s)
	}
	s := fmt.Sprintf("kselftest %s: flaky (%s", k.Name, strings.Join(steps, ", then "))
	if k.KnownFlaky != "" {
		s += "; known flaky: " + k.KnownFlaky
	}
	if k.Strict {
		s += "; --strict counts it as a failure"
	}
	return s + ")"
}

// TimingOnlyFailure reports whether r failed on timing-only assertions
// alone: no splat, no hang, no behavioural assertion, no kselftest, no step
// error. Only such a run is worth running again.
func (r *Result) TimingOnlyFailure() bool {
	if r.Verdict != Fail || r.Hang != nil {
		return false
	}
	timing := map[string]bool{}
	for _, a := range r.Asserts {
		if a.Passed {
			continue
		}
		if !a.TimingOnly || a.Unmeasured {
			return false
		}
		timing[a.Reason()] = true
	}
	for _, reason := range r.Reasons {
		if !timing[reason] {
			return false // a kselftest, a step error, the guest died
		}
	}
	return len(timing) > 0
}

// Retried records that retry ran again the failed run first, which was in
// firstDir: retry links to the failed run (and first to it), and a retry
// that passed is flaky; strict makes it a FAIL. It returns the run that
// stands for both: the retry, unless it could not tell (ERROR).
func Retried(first *Result, firstDir string, retry *Result, retryDir string, strict bool) *Result {
	first.RetriedIn = retryDir
	retry.RetryOf = &Retry{Dir: firstDir}
	for _, a := range first.Asserts {
		if !a.Passed {
			retry.RetryOf.Failed = append(retry.RetryOf.Failed, a)
		}
	}
	switch retry.Verdict {
	case Error:
		return first
	case Pass:
		retry.Flaky = true
		if strict {
			retry.Verdict = Fail
			retry.Reasons = append(retry.Reasons, "flaky, --strict counts it as a failure: "+strings.Join(retry.RetryOf.Reasons(), "; "))
		}
	}
	return retry
}

// FlakyLines lists what was flaky in the run, one line each.
func (r *Result) FlakyLines() []string {
	var out []string
	if r.Flaky && r.RetryOf != nil {
		out = append(out, fmt.Sprintf("flaky: failed only on timing-only assertions in %s (%s), passed on retry",
			r.RetryOf.Dir, strings.Join(r.RetryOf.Reasons(), "; ")))
	}
	for _, k := range r.Kselftests {
		if k.Flaky() {
			out = append(out, k.FlakyLine())
		}
	}
	return out
}
