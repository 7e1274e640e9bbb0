package report

import (
	"bytes"
	"strings"
	"testing"

	"napilab/results"
)

// TestHTMLWindows: a windowed assertion's spans are drawn under the steps,
// red when it failed, with what was measured as the tip.
func TestHTMLWindows(t *testing.T) {
	r := &results.Result{Scenario: "s", Verdict: results.Fail, Timings: results.Timings{Timeline: 4},
		Steps: []results.Step{{Name: "flip", Start: 0, Duration: 3, Iterations: 6}},
		Asserts: []results.Assert{{Name: "kthread after <1>", Kind: "polls", Measured: "5 of 6 windows in bounds",
			Window: `500ms after each repetition of "flip"`, Spans: [][2]float64{{1, 1.5}}}}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`opacity="0.6"><title>kthread after &lt;1&gt;: 5 of 6 windows in bounds`,
		`500ms after each repetition of &#34;flip&#34;`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
