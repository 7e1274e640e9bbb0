package agent

import (
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	// Real lines from a 6.18 host; the comms were set through /proc/PID/comm.
	for _, tc := range []struct {
		name, line string
		want       taskStat
	}{
		{"process", "32381 (cat) R 32379 32379 27273 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 207505 3133440 418 18446744073709551615 94632366395392 94632366415273 140733299846976 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94632366431280 94632366432896 94632817119232 140733299854009 140733299854029 140733299854029 140733299855339 0",
			taskStat{Comm: "cat", CPU: 0}},
		{"ksoftirqd stime", "14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 34 0 0 20 0 1 0 23 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
			taskStat{Comm: "ksoftirqd/0", Utime: 0, Stime: 34, CPU: 0}},
		{"ksoftirqd utime cpu1", "22 (ksoftirqd/1) S 2 0 0 0 -1 69238848 0 0 0 0 43 0 0 0 20 0 1 0 23 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
			taskStat{Comm: "ksoftirqd/1", Utime: 43, Stime: 0, CPU: 1}},
		{"kworker", "44 (kworker/1:1H-kblockd) I 2 0 0 0 -1 69238880 0 0 0 0 0 102 0 0 0 -20 1 0 35 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
			taskStat{Comm: "kworker/1:1H-kblockd", Stime: 102, CPU: 1}},
		{"parentheses", "32598 ((sd-pam)) R 32596 32596 27273 0 -1 4194304 168 0 0 0 0 0 0 0 20 0 1 0 208374 4464640 779 18446744073709551615 94734239473664 94734240263069 140727048593232 0 0 0 0 4 65536 0 0 0 17 0 0 0 0 0 0 94734240496368 94734240544612 94734560460800 140727048600196 140727048600276 140727048600276 140727048601578 0",
			taskStat{Comm: "(sd-pam)"}},
		{"spaces and a fake state", "32599 (x) R 1 (y z) R 32596 32596 27273 0 -1 4194304 167 0 0 0 0 0 0 0 20 0 1 0 208375 4464640 761 18446744073709551615 94001259581440 94001260370845 140721533852656 0 0 0 0 4 65536 0 0 0 17 0 0 0 0 0 0 94001260604144 94001260652388 94002092736512 140721533860481 140721533860564 140721533860564 140721533861866 0",
			taskStat{Comm: "x) R 1 (y z"}},
		{"thread on cpu1", "32601 (sleep) S 32600 32596 27273 0 -1 4194304 116 0 0 0 0 0 0 0 20 0 1 0 208376 2990080 410 18446744073709551615 93973044994048 93973045011977 140726118718064 0 0 0 0 6 0 1 0 0 17 1 0 0 0 0 0 93973045026064 93973045027328 93973067059200 140726118726344 140726118726354 140726118726354 140726118727657 0",
			taskStat{Comm: "sleep", CPU: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat(tc.line + "\n")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseStatBad(t *testing.T) {
	for _, line := range []string{"", "12 cat R 1", "12 (cat) R 1 2 3", "12 (cat" + strings.Repeat(" x", 50)} {
		if _, err := parseStat(line); err == nil {
			t.Errorf("parseStat(%q): no error", line)
		}
	}
}

func TestTasksSelf(t *testing.T) {
	// This test binary's own threads share its comm.
	out := tasks("agent.test")
	if out == "" {
		t.Skip("comm of the test binary is not agent.test")
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) != 5 || f[1] != "agent.test" {
			t.Errorf("bad line %q, want \"pid comm utime stime processor\"", l)
		}
	}
}

func TestSchedSelf(t *testing.T) {
	out := sched("agent.test")
	if out == "" {
		t.Skip("comm of the test binary is not agent.test, or no schedstat")
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 5 || f[4] != "agent.test" {
			t.Errorf("bad line %q, want \"pid run_ns voluntary involuntary comm\"", l)
		}
	}
}

func TestParseSwitches(t *testing.T) {
	v, i, err := parseSwitches([]byte("Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n"))
	if err != nil || v != 12 || i != 3 {
		t.Errorf("got %d %d %v, want 12 3", v, i, err)
	}
	for _, bad := range []string{"Name:\tx\n", "voluntary_ctxt_switches:\tx\nnonvoluntary_ctxt_switches:\t3\n", "voluntary_ctxt_switches:\t1\n"} {
		if _, _, err := parseSwitches([]byte(bad)); err == nil {
			t.Errorf("parseSwitches(%q): no error", bad)
		}
	}
	if _, err := parseRunNs("1 2"); err == nil {
		t.Error("parseRunNs of two fields: no error")
	}
	if n, err := parseRunNs("1500 20 7\n"); err != nil || n != 1500 {
		t.Errorf("parseRunNs: %d %v", n, err)
	}
	sched := "napi/vrx-1 (42, #threads: 1)\n---\nse.exec_start : 1.5\nse.sum_exec_runtime                          :          1234.567890\n"
	if n, err := parseSumExec([]byte(sched)); err != nil || n != 1234567890 {
		t.Errorf("parseSumExec: %d %v, want 1234567890", n, err)
	}
	if _, err := parseSumExec([]byte("se.sum_exec_runtime : x.5\n")); err == nil {
		t.Error("parseSumExec of x.5: no error")
	}
}
