package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/results"
	"napilab/results/stats"
)

// flakyResult is a run that retried a timing-only failure and passed, with
// one kselftest that failed and passed on retry, and one that passed.
func flakyResult(strict bool) *results.Result {
	first := &results.Result{Scenario: "kselftest", Verdict: results.Fail,
		Asserts: []results.Assert{{Name: "rx rate", Kind: "rate", Measured: "10/s", Bound: ">= 100", TimingOnly: true}}}
	first.Reasons = []string{first.Asserts[0].Reason()}
	retry := &results.Result{Scenario: "kselftest", Verdict: results.Pass, Started: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Kernel: results.Kernel{Spec: "stock-6.12", Release: "6.12.60", Key: "abc"}, Accel: "tcg",
		Asserts: []results.Assert{{Name: "rx rate", Kind: "rate", Passed: true, Measured: "150/s", Bound: ">= 100", TimingOnly: true}},
		Kselftests: []results.Kselftest{
			{Name: "net:msg_zerocopy.sh", Status: results.KPass, Step: "net:msg_zerocopy.sh", Seconds: 12, Strict: strict,
				KnownFlaky: "the receiver gives up on a starved sender",
				Attempts: []results.Attempt{{Status: results.KFail, Reason: "exit=1", Seconds: 5, File: "kselftests/net:msg_zerocopy.sh.log"},
					{Status: results.KPass, Seconds: 7, File: "kselftests/net:msg_zerocopy.sh.retry1.log"}}},
			{Name: "net:tun", Status: results.KPass, Seconds: 1},
		}}
	if strict {
		retry.Verdict, retry.Reasons = results.Fail, []string{retry.Kselftests[0].ReasonLine()}
	}
	return results.Retried(first, "runs/20261201-100000-kselftest", retry, "runs/20261201-100000-kselftest-retry", strict)
}

// TestFlakyKTAPGolden: a flaky run's KTAP; -update rewrites the golden file.
func TestFlakyKTAPGolden(t *testing.T) {
	for _, strict := range []bool{false, true} {
		name := "flaky.ktap"
		if strict {
			name = "flaky-strict.ktap"
		}
		var b bytes.Buffer
		if err := WriteKTAP(&b, flakyResult(strict)); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "report", name)
		if *update {
			os.WriteFile(golden, b.Bytes(), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if b.String() != string(want) {
			t.Errorf("KTAP differs from %s (-update rewrites it):\n%s", golden, b.String())
		}
	}
}

// TestFlakyReports: every report says what was flaky and keeps both
// attempts; strict makes the flaky kselftest a failure in each.
func TestFlakyReports(t *testing.T) {
	for _, strict := range []bool{false, true} {
		r := flakyResult(strict)
		dir := t.TempDir()
		if err := Save(dir, r); err != nil {
			t.Fatal(err)
		}
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		junit := read("junit.xml")
		var html bytes.Buffer
		if err := WriteHTML(&html, r, nil); err != nil {
			t.Fatal(err)
		}
		var kcidb bytes.Buffer
		if err := WriteKCIDB(&kcidb, r); err != nil {
			t.Fatal(err)
		}
		tests := kcidbValidate(t, kcidb.Bytes())
		var ks map[string]any
		for path, tt := range tests {
			if strings.HasSuffix(path, "msg_zerocopy_sh") {
				ks = tt
			}
		}
		if ks == nil {
			t.Fatalf("no kcidb test for msg_zerocopy.sh in %v", tests)
		}
		misc, _ := ks["misc"].(map[string]any)
		status := "PASS"
		failures := `failures="0"`
		if strict {
			status, failures = "FAIL", `failures="1"`
		}
		for _, c := range []struct{ what, text, want string }{
			{"result.json", read("result.json"), `"retry_of": {`},
			{"result.json", read("result.json"), `"file": "kselftests/net:msg_zerocopy.sh.retry1.log"`},
			{"result.json", read("result.json"), `"known_flaky": "the receiver gives up`},
			{"junit", junit, `<flakyFailure message="fail exit=1">output: kselftests/net:msg_zerocopy.sh.log</flakyFailure>`},
			{"junit", junit, `<flakyFailure message="rx rate: measured 10/s, want &gt;= 100">in runs/20261201-100000-kselftest</flakyFailure>`},
			{"junit", junit, failures},
			{"html", html.String(), `<span class="bad">flaky</span>`},
			{"html", html.String(), `<a href="kselftests/net:msg_zerocopy.sh.log">1: fail</a>`},
			{"html", html.String(), `retry of <a href="../20261201-100000-kselftest/report.html">`},
			{"html", html.String(), `kselftest net:msg_zerocopy.sh: flaky (fail exit=1, then pass; known flaky:`},
			{"kcidb", ks["status"].(string), status},
		} {
			if !strings.Contains(c.text, c.want) {
				t.Errorf("strict %v: %s lacks %q", strict, c.what, c.want)
			}
		}
		if misc["flaky"] != true {
			t.Errorf("kcidb misc %v lacks flaky", misc)
		}
		if strict != (r.Verdict == results.Fail) {
			t.Errorf("strict %v: verdict %s", strict, r.Verdict)
		}
		var back results.Result
		json.Unmarshal([]byte(read("result.json")), &back)
		if !back.Kselftests[0].Flaky() || back.Kselftests[1].Flaky() {
			t.Errorf("flakiness lost in result.json: %+v", back.Kselftests)
		}
	}
}

// TestFlakySummaries: the text summary and the flake rates count flakes.
func TestFlakySummaries(t *testing.T) {
	r := flakyResult(false)
	if got, want := results.KselftestSummary(r.Kselftests), "2 pass (1 flaky: passed on retry)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	lines := r.FlakyLines()
	if len(lines) != 2 || !strings.Contains(lines[0], "timing-only assertions in runs/20261201-100000-kselftest") {
		t.Errorf("flaky lines %q", lines)
	}
	f := stats.SummariseFlakes([]*results.Result{r, {Verdict: results.Pass}})
	if f.Flaky != 1 || !strings.Contains(f.String(), "1 flaky (passed on retry)") {
		t.Errorf("flakes %+v: %s", f, f)
	}
}
