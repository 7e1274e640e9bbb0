package results

import (
	"fmt"
	"regexp"
	"strings"
)

// Kselftest statuses.
const (
	KPass    = "pass"
	KFail    = "fail"
	KSkip    = "skip"
	KTimeout = "timeout"
	KXfail   = "xfail"
	KError   = "error" // the runner printed no result: the test could not run
)

// Kselftest is one upstream selftest as the kselftest runner reported it.
type Kselftest struct {
	// Name is "collection:test", e.g. "net:veth.sh".
	Name string `json:"name"`
	// Status is pass, fail, skip, timeout, xfail or error.
	Status string `json:"status"`
	// Reason is the result line's directive ("SKIP ...", "TIMEOUT 1500
	// seconds", "exit=1") or why the test could not run.
	Reason string `json:"reason,omitempty"`
	// Step is the timeline step that ran it.
	Step    string  `json:"step,omitempty"`
	Seconds float64 `json:"seconds"`
	// Subtests are the KTAP results the test printed itself (a harness test
	// such as tls, or a nested kselftest), in order.
	Subtests []KTAPCase `json:"subtests,omitempty"`
	// Output is what the test printed, without the runner's "# " prefix
	// (first and last 128 KiB).
	Output string `json:"output,omitempty"`
	// Attempts are the test's runs when it was retried, in order; the
	// status above is the last one's.
	Attempts []Attempt `json:"attempts,omitempty"`
	// KnownFlaky is the known-flaky list's reason for the test, if listed.
	KnownFlaky string `json:"known_flaky,omitempty"`
	// Strict counts a flaky test as a failure (lab --strict).
	Strict bool `json:"strict,omitempty"`
}

// Failed reports whether the test counts against the run: it failed on
// every attempt, or it was flaky in a strict run.
func (k Kselftest) Failed() bool {
	return isFailStatus(k.Status) || k.Strict && k.Flaky()
}

// Counts sums subtests by status.
func (k Kselftest) Counts() map[string]int {
	n := map[string]int{}
	for _, c := range k.Subtests {
		n[c.Status]++
	}
	return n
}

// KTAPCase is one "ok"/"not ok" line of KTAP (or TAP 13) output.
type KTAPCase struct {
	Number int    `json:"number"`
	Name   string `json:"name"`
	// Status is pass, fail, skip, timeout or xfail (from "ok"/"not ok" and the directive).
	Status    string     `json:"status"`
	Directive string     `json:"directive,omitempty"`
	Subtests  []KTAPCase `json:"subtests,omitempty"`
	// Output holds the diagnostic lines printed before the result line.
	Output []string `json:"-"`
}

var ktapResultRe = regexp.MustCompile(`^(not ok|ok) (\d+)(?: -)?(?: ([^#]*?))?\s*(?:#\s*(.*))?$`)

// ParseKTAP reads the result lines of KTAP or TAP 13 output, as the
// kselftest runner prints it: a test's own output comes as "# " diagnostic
// lines before its result line, and nested results (a harness test's
// subtests) come inside those lines, behind a further "# " or indented.
func ParseKTAP(text string) []KTAPCase {
	return parseKTAPLines(strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), 0)
}

// maxKTAPDepth bounds nesting (a test printing "# # # ..." forever).
const maxKTAPDepth = 8

func parseKTAPLines(lines []string, depth int) []KTAPCase {
	var cases []KTAPCase
	var pending []string
	for _, line := range lines {
		trimmed := strings.TrimRight(line, " \t")
		if m := ktapResultRe.FindStringSubmatch(trimmed); m != nil {
			c := KTAPCase{Name: strings.TrimSpace(m[3]), Directive: strings.TrimSpace(m[4]), Output: pending}
			fmt.Sscan(m[2], &c.Number)
			c.Status = ktapStatus(m[1] == "ok", c.Directive)
			if depth < maxKTAPDepth {
				c.Subtests = parseKTAPLines(inner(pending), depth+1)
			}
			cases = append(cases, c)
			pending = nil
			continue
		}
		pending = append(pending, line)
	}
	return cases
}

// inner strips one level of nesting ("# " or indentation) from lines that have it.
func inner(lines []string) []string {
	var out []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "# "):
			out = append(out, l[2:])
		case l == "#":
			out = append(out, "")
		case strings.HasPrefix(l, "    "):
			out = append(out, l[4:])
		case strings.HasPrefix(l, "  "):
			out = append(out, l[2:])
		}
	}
	return out
}

// ktapStatus maps "ok"/"not ok" and a directive to a status.
func ktapStatus(ok bool, directive string) string {
	word := strings.ToUpper(strings.Fields(directive + " x")[0])
	switch {
	case word == "SKIP":
		return KSkip
	case word == "TIMEOUT":
		return KTimeout
	case word == "XFAIL":
		return KXfail
	case ok:
		return KPass
	}
	return KFail
}

// KselftestFromOutput turns the output of `run_kselftest.sh -t name` into
// one result: the runner's top-level line for the test gives the status,
// the lines before it (without their "# " prefix) the output and subtests.
func KselftestFromOutput(name, output string) Kselftest {
	k := Kselftest{Name: name}
	var top *KTAPCase
	cases := ParseKTAP(output)
	for i := range cases {
		if kselftestName(cases[i].Name) == name {
			top = &cases[i]
		}
	}
	if top == nil {
		k.Status, k.Reason = KError, "the kselftest runner printed no result line for "+name
		k.Output = output
		return k
	}
	k.Status, k.Reason, k.Subtests = top.Status, top.Directive, top.Subtests
	k.Output = strings.Join(inner(top.Output), "\n")
	if k.Status == KSkip && strings.EqualFold(strings.TrimSpace(k.Reason), "SKIP") {
		// The runner says only "# SKIP" when a test exits 4: the test's
		// last words say why.
		if why := lastLine(k.Output); why != "" && why != "selftests: "+strings.Replace(name, ":", ": ", 1) {
			k.Reason = "SKIP: " + strings.TrimPrefix(strings.TrimPrefix(why, "SKIP: "), "SKIP ")
		}
	}
	return k
}

// lastLine is the last non-blank line of s, at most 200 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n \t"), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}

// kselftestName turns the runner's "selftests: net: veth.sh" into "net:veth.sh".
func kselftestName(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "selftests:")
	coll, test, ok := strings.Cut(s, ":")
	if !ok {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(coll) + ":" + strings.TrimSpace(test)
}

// KselftestSummary counts tests by status, e.g. "3 pass, 1 skip".
func KselftestSummary(ks []Kselftest) string {
	n := map[string]int{}
	flaky := 0
	for _, k := range ks {
		n[k.Status]++
		if k.Flaky() {
			flaky++
		}
	}
	s := statusSummary(n)
	if flaky > 0 {
		s += fmt.Sprintf(" (%d flaky: passed on retry)", flaky)
	}
	return s
}

// statusSummary writes counts by status in a fixed order, e.g. "3 pass, 1 skip".
func statusSummary(n map[string]int) string {
	var parts []string
	for _, s := range []string{KPass, KFail, KTimeout, KError, KSkip, KXfail} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// ReasonLine is how a failed kselftest reads among a result's Reasons.
func (k Kselftest) ReasonLine() string {
	if k.Flaky() {
		return k.FlakyLine()
	}
	s := fmt.Sprintf("kselftest %s: %s", k.Name, k.Status)
	if k.Reason != "" {
		s += " (" + k.Reason + ")"
	}
	if n := k.Counts(); n[KFail] > 0 {
		s += fmt.Sprintf(", %d of %d subtests failed", n[KFail], len(k.Subtests))
	}
	if len(k.Attempts) > 1 {
		s += fmt.Sprintf(", on each of %d attempts", len(k.Attempts))
	}
	return s
}

// SubtestSummary counts subtests by status, e.g. "12 pass, 1 skip".
func SubtestSummary(cs []KTAPCase) string {
	return statusSummary(Kselftest{Subtests: cs}.Counts())
}
