package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTallySummary: verdict lines are counted whatever the writes' split,
// indented lines are not, and what did not pass or skip is listed.
func TestTallySummary(t *testing.T) {
	var out bytes.Buffer
	tw := newTallyWriter(&out)
	for _, w := range []string{
		"PASS  a on stock-6.1 (6.1.192)  boot 1.0s\n  ok   no kernel splat    0 splats (want 0 splats)\n",
		"SKIP  b on stock-6.1 (6.1.192): needs kernel 6.12\n",
		"FAIL  c on stock-7.3 (7.3.4)  boot", " 1.2s\n  FAIL hang in napi_disable\n",
		"ERROR  d on kernels/x.yaml: build failed\n",
		"  compile 120 objects  30.0s\n",
		"PASS  perf e on stock-6.12 against stock-6.12 (5 runs per side, 120s)\n",
	} {
		tw.Write([]byte(w))
	}
	before := out.Len()
	tw.summary(90 * time.Second)
	got := out.String()[before:]
	want := "\n5 verdicts in 1m30s: 2 PASS, 1 SKIP, 1 FAIL, 1 ERROR\n" +
		"  FAIL  c on stock-7.3 (7.3.4)  boot 1.2s\n" +
		"  ERROR  d on kernels/x.yaml: build failed\n"
	if got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	// One verdict is its own summary.
	out.Reset()
	one := newTallyWriter(&out)
	one.Write([]byte("PASS  a on stock-6.1 (6.1.192)  boot 1.0s\n"))
	one.summary(time.Second)
	if strings.Contains(out.String(), "verdicts") {
		t.Errorf("a summary after one verdict: %q", out.String())
	}
}
