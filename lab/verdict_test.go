package main

import (
	"bytes"
	"strings"
	"testing"

	"napilab/results"
)

// TestVerdictMarks: a failed assertion reads FAIL, one the lab could not
// measure (an ERROR) reads n/m.
func TestVerdictMarks(t *testing.T) {
	r := &results.Result{Scenario: "s", Verdict: results.Error, Kernel: results.Kernel{Spec: "stock-6.1"}, Asserts: []results.Assert{
		{Name: "held", Passed: true},
		{Name: "broke", Measured: "3"},
		{Name: "required", Measured: "not measured", Unmeasured: true},
	}}
	var b bytes.Buffer
	writeVerdict(&b, r, "")
	for _, want := range []string{"  ok   held ", "  FAIL broke ", "  n/m  required "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}
