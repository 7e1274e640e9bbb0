package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"

	"napilab/results"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	// Flaky are failed attempts before a pass (Maven Surefire's rerun
	// report, which Jenkins and GitLab read).
	Flaky     []junitMessage `xml:"flakyFailure,omitempty"`
	Time      float64        `xml:"time,attr,omitempty"`
	SystemOut string         `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the results as JUnit XML, one suite per result (several
// for merged shards): one case per assertion, plus a case for
// infrastructure errors and hangs.
func WriteJUnit(path string, rs ...*results.Result) error {
	var b bytes.Buffer
	if err := writeJUnitTo(&b, rs...); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// writeJUnitTo writes the junit.xml of rs to w.
func writeJUnitTo(w io.Writer, rs ...*results.Result) error {
	var all junitSuites
	for _, r := range rs {
		all.Suites = append(all.Suites, newJUnitSuite(r))
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(b, '\n')...))
	return err
}

func newJUnitSuite(r *results.Result) junitSuite {
	s := junitSuite{Name: r.Scenario + " @ " + r.Kernel.Spec, Time: r.Timings.Total}
	class := "napilab." + r.Kernel.Spec + "." + r.Scenario
	if r.Verdict == results.Error {
		s.Cases = append(s.Cases, junitCase{Name: "infrastructure", Classname: class,
			Error: &junitMessage{Message: strings.Join(r.Reasons, "; "), Body: r.ConsoleTail}})
	}
	if r.Hang != nil {
		// A deadline miss the evidence did not pin on the kernel (a
		// starved host) is the run's ERROR, not a failed case.
		c := junitCase{Name: "no hang", Classname: class}
		m := &junitMessage{Message: hangMessage(r.Hang), Body: r.Hang.Evidence}
		if r.Verdict == results.Fail {
			c.Failure = m
		} else {
			c.Error = m
		}
		s.Cases = append(s.Cases, c)
	}
	for _, a := range r.Asserts {
		c := junitCase{Name: a.Name, Classname: class,
			SystemOut: fmt.Sprintf("measured %s, bound %s", a.Measured, a.Bound)}
		if !a.Passed {
			c.Failure = &junitMessage{Message: fmt.Sprintf("%s: measured %s, want %s", a.Name, a.Measured, a.Bound), Body: a.Detail}
		}
		if first, ok := r.RetryOf.FailedFirst(a.Name); ok {
			c.Flaky = append(c.Flaky, junitMessage{Message: first.Reason(), Body: "in " + r.RetryOf.Dir})
		}
		s.Cases = append(s.Cases, c)
	}
	for _, k := range r.Kselftests {
		coll, test, _ := strings.Cut(k.Name, ":")
		c := junitCase{Name: test, Classname: "kselftest." + coll, Time: k.Seconds, SystemOut: k.Output}
		switch {
		case k.Status == results.KSkip:
			c.Skipped = &junitMessage{Message: k.Reason}
		case k.Failed():
			c.Failure = &junitMessage{Message: k.ReasonLine(), Body: k.Output}
			c.SystemOut = "" // the failure's body has it
		}
		if k.Flaky() {
			for _, at := range k.Attempts[:len(k.Attempts)-1] {
				c.Flaky = append(c.Flaky, junitMessage{Message: strings.TrimSpace(at.Status + " " + at.Reason), Body: "output: " + at.File})
			}
		}
		s.Cases = append(s.Cases, c)
		// A harness test's own results, one case each (kselftest.net.tun).
		for _, sub := range k.Subtests {
			sc := junitCase{Name: sub.Name, Classname: "kselftest." + coll + "." + test}
			switch sub.Status {
			case results.KSkip:
				sc.Skipped = &junitMessage{Message: sub.Directive}
			case results.KFail, results.KTimeout:
				sc.Failure = &junitMessage{Message: strings.TrimSpace("not ok " + sub.Name + " " + sub.Directive), Body: strings.Join(sub.Output, "\n")}
			}
			s.Cases = append(s.Cases, sc)
		}
	}
	for _, c := range s.Cases {
		s.Tests++
		if c.Skipped != nil {
			s.Skipped++
		}
		if c.Failure != nil {
			s.Failures++
		}
		if c.Error != nil {
			s.Errors++
		}
	}
	return s
}

// hangMessage says which step missed its deadline, and what QEMU got of
// the host's CPU meanwhile when measured.
func hangMessage(h *results.Hang) string {
	m := fmt.Sprintf("step %q (line %d) did not finish within %s", h.Step, h.Line, h.Deadline)
	if h.Host != "" {
		m += " (" + h.Host + ")"
	}
	return m
}
