package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"napilab/results"
)

// repCase is one check of a run as the KTAP and KCIDB exports list it.
type repCase struct {
	name    string
	status  string         // PASS, FAIL or ERROR (the KCIDB status names)
	reason  string         // why not PASS, after " # " on a KTAP "not ok" line
	diag    []string       // KTAP "# " lines after the test line
	excerpt string         // evidence: KCIDB's log_excerpt
	misc    map[string]any // KCIDB's misc
}

// WriteKTAP writes the result as KTAP version 1, the way kselftest prints a
// suite: the plan, diagnostic lines for the run (kernel, verdict, reasons),
// one test line per assertion ("not ok 2 name # measured X, want Y"), an
// infrastructure error and a hang as test lines of their own, and the
// kselftest "# Totals:" line.
//
//	KTAP version 1
//	1..2
//	# napilab lkdtm-warning on stock-6.1 (6.1.192)
//	ok 1 softirqs.NET_RX grows
//	not ok 2 no kernel splat # measured 1 splats, want 0 splats
func WriteKTAP(w io.Writer, r *results.Result) error {
	cases := repCases(r)
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "KTAP version 1")
	fmt.Fprintf(bw, "1..%d\n", len(cases))
	ktapDiag(bw, fmt.Sprintf("napilab %s on %s (%s)", r.Scenario, r.Kernel.Spec, repDash(r.Kernel.Release)))
	ktapDiag(bw, "kernel key "+repDash(r.Kernel.Key))
	if r.ScenarioFile != "" {
		ktapDiag(bw, "scenario file "+r.ScenarioFile)
	}
	if !r.Started.IsZero() {
		ktapDiag(bw, "started "+r.Started.UTC().Format("2006-01-02T15:04:05Z"))
	}
	ktapDiag(bw, fmt.Sprintf("accel %s, seed %d, boot %.1fs, timeline %.1fs, total %.1fs",
		repDash(r.Accel), r.Seed, r.Timings.Boot, r.Timings.Timeline, r.Timings.Total))
	for _, k := range repKeys(r.Params) {
		ktapDiag(bw, fmt.Sprintf("param %s=%s", k, r.Params[k]))
	}
	ktapDiag(bw, "verdict "+string(r.Verdict))
	for _, reason := range r.Reasons {
		ktapDiag(bw, "reason: "+reason)
	}
	if r.Flaky && r.RetryOf != nil {
		ktapDiag(bw, "flaky: passed on retry; failed only on timing-only assertions in "+r.RetryOf.Dir)
	}
	if r.RetryOf != nil {
		ktapDiag(bw, "retry of "+r.RetryOf.Dir)
	}
	if r.RetriedIn != "" {
		ktapDiag(bw, "retried in "+r.RetriedIn)
	}
	for _, s := range r.Splats {
		d := fmt.Sprintf("splat: %s (%s", s.Title, s.Where())
		if s.Allowed != "" {
			d += ", allowed: " + s.Allowed
		}
		ktapDiag(bw, d+")")
	}
	pass, fail, errs, skip := 0, 0, 0, 0
	for i, c := range cases {
		line := fmt.Sprintf("ok %d %s", i+1, ktapName(c.name))
		if c.status == "SKIP" {
			line += " # SKIP " + ktapOneLine(c.reason)
		} else if c.status != "PASS" {
			line = "not " + line
			if c.reason != "" {
				line += " # " + ktapOneLine(c.reason)
			}
		}
		fmt.Fprintln(bw, line)
		for _, d := range c.diag {
			ktapDiag(bw, d)
		}
		switch c.status {
		case "PASS":
			pass++
		case "ERROR":
			errs++
		case "SKIP":
			skip++
		default:
			fail++
		}
	}
	fmt.Fprintf(bw, "# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:%d\n", pass, fail, skip, errs)
	return bw.Flush()
}

// repCases lists the run's checks in JUnit's order: the lab failure
// (verdict ERROR), the hang, then the assertions.
func repCases(r *results.Result) []repCase {
	var cases []repCase
	if r.Verdict == results.Error {
		cases = append(cases, repCase{name: "infrastructure", status: "ERROR",
			reason: "error: " + strings.Join(r.Reasons, "; "), excerpt: r.ConsoleTail,
			misc: kcidbMisc("reasons", r.Reasons)})
	}
	if h := r.Hang; h != nil {
		status := "FAIL"
		if r.Verdict != results.Fail {
			status = "ERROR" // not pinned on the kernel (a starved host)
		}
		c := repCase{name: "no hang", status: status,
			reason:  hangMessage(h),
			excerpt: h.Evidence,
			misc:    kcidbMisc("step", h.Step, "line", h.Line, "deadline", h.Deadline, "function", h.Function)}
		if h.Function != "" {
			c.diag = append(c.diag, "stuck in "+h.Function)
		}
		cases = append(cases, c)
	}
	for _, a := range r.Asserts {
		c := repCase{name: a.Name, status: "PASS",
			misc: kcidbMisc("kind", a.Kind, "line", a.Line, "measured", a.Measured, "bound", a.Bound, "detail", a.Detail, "timing_only", a.TimingOnly)}
		if first, ok := r.RetryOf.FailedFirst(a.Name); ok {
			c.diag = append(c.diag, "flaky: failed in "+r.RetryOf.Dir+": "+first.Reason())
			c.misc = addMisc(c.misc, "flaky", true)
		}
		if !a.Passed {
			c.status = "FAIL"
			c.reason = fmt.Sprintf("measured %s, want %s", a.Measured, a.Bound)
			c.excerpt = a.Detail
			if a.Detail != "" && !strings.Contains(a.Measured, a.Detail) {
				c.diag = strings.Split(strings.TrimRight(a.Detail, "\n"), "\n")
			}
			if a.Kind == "no-splat" {
				for _, s := range r.Splats {
					if s.Allowed == "" {
						c.excerpt = s.Report
						break
					}
				}
			}
		}
		cases = append(cases, c)
	}
	for _, k := range r.Kselftests {
		c := repCase{name: "kselftest " + k.Name, status: "PASS", reason: k.Reason,
			misc: kcidbMisc("step", k.Step, "seconds", k.Seconds, "status", k.Status, "known_flaky", k.KnownFlaky)}
		if k.Flaky() {
			c.diag = append(c.diag, k.FlakyLine())
			for i, at := range k.Attempts {
				c.diag = append(c.diag, fmt.Sprintf("attempt %d: %s, output %s", i+1, strings.TrimSpace(at.Status+" "+at.Reason), repDash(at.File)))
			}
			c.misc = addMisc(addMisc(c.misc, "flaky", true), "attempts", k.Attempts)
		}
		switch {
		case k.Status == results.KSkip:
			c.status = "SKIP"
		case k.Status == results.KError:
			c.status, c.reason, c.excerpt = "ERROR", k.ReasonLine(), tail(k.Output, 16<<10)
		case k.Failed():
			c.status, c.reason, c.excerpt = "FAIL", k.ReasonLine(), tail(k.Output, 16<<10)
			for _, sub := range k.Subtests {
				if sub.Status == results.KFail || sub.Status == results.KTimeout {
					c.diag = append(c.diag, "not ok "+sub.Name)
				}
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// addMisc sets key in m, making m if need be.
func addMisc(m map[string]any, key string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[key] = v
	return m
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// ktapDiag writes one diagnostic line per line of s.
func ktapDiag(w io.Writer, s string) {
	for _, l := range strings.Split(s, "\n") {
		fmt.Fprintln(w, strings.TrimRight("# "+l, " "))
	}
}

// ktapName keeps a test name on one line and free of '#', which would start a directive.
func ktapName(s string) string {
	s = strings.ReplaceAll(ktapOneLine(s), "#", "_")
	if s == "" {
		return "unnamed"
	}
	return s
}

func ktapOneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func repDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
