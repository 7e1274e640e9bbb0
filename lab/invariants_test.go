package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"napilab/results"
)

// TestJudgeRecordedRun judges a recorded run folder: softirq polls eth0/rx-0
// on past a threaded=1 flip by 1.5 s.
func TestJudgeRecordedRun(t *testing.T) {
	dir := t.TempDir()
	r := &results.Result{Scenario: "s", Verdict: results.Pass, Kernel: results.Kernel{Spec: "stock-6.1"},
		Knobs: []results.Knob{{Step: "flip", Line: 3, Start: 1, Done: 1.01, Dev: "eth0", Kind: results.KnobThreaded, Value: "1"}}}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for i := range 20 {
		at := float64(i) * 0.2
		soft := min(at, 2.5) * 100
		line := results.SampleLine{Group: "napi_polls", Host: at, Sample: results.SampleSnapshot{
			Values: map[string]string{"napi_polls": fmt.Sprintf("eth0 rx-0 softirq 0 0 %d %d\n", int(soft), int(soft))}}}
		json.NewEncoder(&b).Encode(line)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SamplesFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := judgeRuns(&out, []string{dir}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "threaded-not-softirq") || !strings.Contains(got, "stock-6.1") || !strings.Contains(got, "1.59s") {
		t.Fatalf("output:\n%s", got)
	}
	fields := strings.Fields(strings.Split(got, "\n")[1])
	// 7 windows past the flip saw softirq: the grace splits them.
	broken, _ := strconv.Atoi(fields[5])
	settling, _ := strconv.Atoi(fields[6])
	if fields[3] != "13" || fields[4] != "windows" || broken+settling != 7 || broken == 0 {
		t.Errorf("judged/broken/settling %v, want 13 windows and 7 broken or settling", fields[3:7])
	}
	if err := judgeRuns(&out, []string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing folder judged")
	}
}
