package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKselftestFromOutput(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		status    string
		reason    string
		subtests  map[string]int
		outputHas string
	}{
		{name: "net:reuseport_bpf", status: KPass, outputHas: "Testing EBPF mod 10...", out: `TAP version 13
1..1
# selftests: net: reuseport_bpf
# ---- IPv4 UDP ----
# Testing EBPF mod 10...
ok 1 selftests: net: reuseport_bpf
`},
		{name: "net:tls", status: KFail, reason: "exit=1", subtests: map[string]int{KPass: 1, KFail: 1, KSkip: 1}, out: `TAP version 13
1..1
# selftests: net: tls
# TAP version 13
# 1..3
# # Starting 3 tests from 2 test cases.
# #  RUN           global.non_established ...
# #            OK  global.non_established
# ok 1 global.non_established
# not ok 2 tls.12_aes_gcm.sendfile
# ok 3 tls.13_chacha.recv_peek # SKIP no support
# # FAILED: 2 / 3 tests passed.
not ok 1 selftests: net: tls # exit=1
`},
		{name: "net:fib_tests.sh", status: KTimeout, reason: "TIMEOUT 1500 seconds", out: "# selftests: net: fib_tests.sh\n# Single path route test\nnot ok 1 selftests: net: fib_tests.sh # TIMEOUT 1500 seconds\n"},
		{name: "net:udpgro.sh", status: KSkip, reason: "SKIP: Missing xdp_dummy.o", out: "# selftests: net: udpgro.sh\n# Missing xdp_dummy.o\nok 1 selftests: net: udpgro.sh # SKIP\n"},
		{name: "net:altnames.sh", status: KSkip, reason: "SKIP: mausezahn not installed", out: "# selftests: net: altnames.sh\n# SKIP: mausezahn not installed\nok 1 selftests: net: altnames.sh # SKIP\n"},
		{name: "net:x.sh", status: KSkip, reason: "SKIP", out: "# selftests: net: x.sh\nok 1 selftests: net: x.sh # SKIP\n"},
		{name: "net:veth.sh", status: KError, reason: "the kselftest runner printed no result line for net:veth.sh", out: "bash: ./run_kselftest.sh: No such file\n"},
	} {
		k := KselftestFromOutput(tc.name, tc.out)
		if k.Status != tc.status || k.Reason != tc.reason {
			t.Errorf("%s: status %q reason %q, want %q %q", tc.name, k.Status, k.Reason, tc.status, tc.reason)
		}
		if got := k.Counts(); tc.subtests != nil && (got[KPass] != tc.subtests[KPass] || got[KFail] != tc.subtests[KFail] || got[KSkip] != tc.subtests[KSkip]) {
			t.Errorf("%s: subtests %v, want %v", tc.name, got, tc.subtests)
		}
		if tc.outputHas != "" && !strings.Contains(k.Output, tc.outputHas) || strings.Contains(k.Output, "# Testing") {
			t.Errorf("%s: output %q, want it to hold %q without the runner's prefix", tc.name, k.Output, tc.outputHas)
		}
	}
}

func TestKselftestFailed(t *testing.T) {
	for s, want := range map[string]bool{KPass: false, KSkip: false, KXfail: false, KFail: true, KTimeout: true, KError: true} {
		if got := (Kselftest{Status: s}).Failed(); got != want {
			t.Errorf("Failed(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestKselftestRecorded parses the runner's output captured from lab
// kselftest guests (a run folder's kselftests/*.log, kept as
// testdata/ktap/<collection>_<test>.out), each with its expected status and,
// optionally, its number of subtests in a .want file.
func TestKselftestRecorded(t *testing.T) {
	files, _ := filepath.Glob("testdata/ktap/*.out")
	if len(files) == 0 {
		t.Skip("no recorded outputs")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(f, ".out") + ".want")
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(want))
		name := strings.Replace(strings.TrimSuffix(filepath.Base(f), ".out"), "_", ":", 1)
		k := KselftestFromOutput(name, string(data))
		if k.Status != fields[0] {
			t.Errorf("%s: status %s (%s), want %s", f, k.Status, k.Reason, fields[0])
		}
		if len(fields) > 1 && fmt.Sprint(len(k.Subtests)) != fields[1] {
			t.Errorf("%s: %d subtests, want %s", f, len(k.Subtests), fields[1])
		}
		if !strings.HasPrefix(k.Output, "selftests: ") {
			t.Errorf("%s: output %.40q should start with the runner's header, its prefix stripped", f, k.Output)
		}
	}
}

func TestSummaries(t *testing.T) {
	subs := []KTAPCase{{Status: KSkip}, {Status: KPass}, {Status: KFail}, {Status: KPass}}
	if got := SubtestSummary(subs); got != "2 pass, 1 fail, 1 skip" {
		t.Errorf("SubtestSummary = %q", got)
	}
	ks := []Kselftest{{Status: KTimeout}, {Status: KPass}, {Status: KError}}
	if got := KselftestSummary(ks); got != "1 pass, 1 timeout, 1 error" {
		t.Errorf("KselftestSummary = %q", got)
	}
}
