package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
)

// TestKselftestJUnit: a kselftest is a case, its subtests are cases of
// their own, skips are <skipped> and count in the suite. The output is one
// of the model's recorded kselftest runs.
func TestKselftestJUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "ktap", "net_tap.out"))
	if err != nil {
		t.Fatal(err)
	}
	tap := results.KselftestFromOutput("net:tap", string(data))
	tap.Subtests[1].Status, tap.Subtests[1].Directive = results.KFail, ""
	r := &results.Result{Scenario: "kselftest", Verdict: results.Fail, Kselftests: []results.Kselftest{tap,
		{Name: "net:tls", Status: results.KSkip, Reason: "SKIP: tls did not compile"}}}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(path, r); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(path)
	for _, want := range []string{`tests="5" failures="1" errors="0" skipped="1"`,
		`<testcase name="tap.test_packet_valid_udp_csum" classname="kselftest.net.tap">`,
		`<failure message="not ok tap.test_packet_valid_udp_csum">`,
		`<testcase name="tls" classname="kselftest.net"`, `<skipped message="SKIP: tls did not compile">`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("junit.xml lacks %s:\n%s", want, out)
		}
	}
}
