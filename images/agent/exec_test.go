package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "tool"), filepath.Join(dir, "data")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := "/nonexistent:" + dir
	for _, tc := range []struct {
		name, arg, want string
	}{
		{"searched", "tool", exe},
		{"absolute", exe, exe},
		{"not executable", "data", ""},
		{"missing", "iperf3", ""},
		{"missing absolute", "/usr/bin/nosuch-napilab", ""},
		{"a directory", dir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(tc.arg, path)
			if tc.want == "" {
				want := fmt.Sprintf("no such program %q in the guest image", tc.arg)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("lookPath(%q) = %q, %v; want error %q", tc.arg, got, err, want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("lookPath(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
		})
	}
}

func TestExecEnv(t *testing.T) {
	if got := execEnv([]string{"HOME=/", "TERM=linux"}); !reflect.DeepEqual(got, []string{"HOME=/", "TERM=linux", "PATH=" + defaultPath}) {
		t.Errorf("without PATH: %q", got)
	}
	if got := execEnv([]string{"PATH=/x"}); !reflect.DeepEqual(got, []string{"PATH=/x", "HOME=/root"}) {
		t.Errorf("with PATH: %q", got)
	}
}

func TestCappedBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"short", []string{"hel", "lo"}, "hello"},
		{"into the tail", []string{"hello", " wor"}, "hello wor"},
		{"exactly at the limit", []string{"hello", " worl"}, "hello worl"},
		{"one over", []string{"hello", " world"}, "hello" + wire.CutLine(1) + "world"},
		{"over in pieces", []string{"hello", " world", "!"}, "hello" + wire.CutLine(2) + "orld!"},
		{"over in one write", []string{"abcdefghijklmnopqrstuvwxyz"}, "abcde" + wire.CutLine(16) + "vwxyz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cappedBuffer{max: 10}
			for _, s := range tc.writes {
				if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := c.String(); got != tc.want {
				t.Errorf("%q: got %q, want %q", tc.writes, got, tc.want)
			}
		})
	}
}

// needSh skips when the host has no /bin/sh to stand in for a guest tool.
func needSh(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
}

func TestExec(t *testing.T) {
	needSh(t)
	a := newAgent()
	for _, tc := range []struct {
		name string
		argv []string
		want wire.ExecResult
	}{
		{"exit code and both streams", []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, wire.ExecResult{ExitCode: 3, Stdout: "out\n", Stderr: "err\n"}},
		{"searched", []string{"sh", "-c", "echo $0"}, wire.ExecResult{Stdout: "sh\n"}},
		{"killed by a signal", []string{"/bin/sh", "-c", "kill -9 $$"}, wire.ExecResult{ExitCode: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.exec(wire.Exec{Argv: tc.argv})
			if err != nil {
				t.Fatal(err)
			}
			if *got != tc.want {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestExecTruncates(t *testing.T) {
	needSh(t)
	// The verdict of a test is on its last line: the tail of each stream is
	// kept, and the host's Clip leaves what the agent bounded alone.
	got, err := newAgent().exec(wire.Exec{Argv: []string{"/bin/sh", "-c",
		"head -c 400000 /dev/zero; echo; echo last line; head -c 300000 /dev/zero >&2; echo last error >&2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.ExitCode != 0 {
		t.Errorf("exit %d", got.ExitCode)
	}
	for _, s := range []struct {
		name, out, last string
		n               int
	}{
		{"stdout", got.Stdout, "\nlast line\n", 400000},
		{"stderr", got.Stderr, "last error\n", 300000},
	} {
		dropped := s.n + len(s.last) - wire.OutputMax
		if !strings.HasSuffix(s.out, s.last) || !strings.Contains(s.out, wire.CutLine(dropped)) || wire.Clip(s.out) != s.out {
			t.Errorf("%s: %d bytes ending %q; want the last line and %d dropped", s.name, len(s.out), s.out[max(0, len(s.out)-30):], dropped)
		}
	}
}

func TestExecErrors(t *testing.T) {
	a := newAgent()
	if _, err := a.exec(wire.Exec{}); err == nil {
		t.Error("empty argv: no error")
	}
	_, err := a.exec(wire.Exec{Argv: []string{"iperf3-napilab-missing", "-s"}})
	if err == nil || !strings.Contains(err.Error(), `no such program "iperf3-napilab-missing" in the guest image`) {
		t.Errorf("missing program: %v", err)
	}
	needSh(t)
	_, err = a.exec(wire.Exec{Netns: "nosuch", Argv: []string{"/bin/sh", "-c", "true"}})
	if err == nil || !strings.Contains(err.Error(), `no netns "nosuch"`) {
		t.Errorf("unknown netns: %v", err)
	}
}

// TestExecInNetns checks that the child starts in the netns, not in the
// agent's: it sees the netns's veth.
func TestExecInNetns(t *testing.T) {
	needSh(t)
	a := testAgent(t)
	h, _ := a.ns.get("t")
	var st unix.Stat_t
	if err := unix.Fstat(int(h), &st); err != nil {
		t.Fatal(err)
	}
	got, err := a.exec(wire.Exec{Netns: "t", Argv: []string{"/bin/sh", "-c", "readlink /proc/self/ns/net; cat /proc/net/dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("net:[%d]\n", st.Ino); !strings.HasPrefix(got.Stdout, want) {
		t.Errorf("child's netns: output %q, want it to start with %q", got.Stdout, want)
	}
	if !strings.Contains(got.Stdout, "va:") {
		t.Errorf("child does not see va:\n%s", got.Stdout)
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	needSh(t)
	defer func(d time.Duration) { execTimeout = d }(execTimeout)
	execTimeout = 300 * time.Millisecond
	start := time.Now()
	// The background sleep holds the output pipe: only a group kill ends it
	// before WaitDelay.
	got, err := newAgent().exec(wire.Exec{Argv: []string{"/bin/sh", "-c", "echo started; sleep 30 & sleep 30"}})
	if err == nil || !strings.Contains(err.Error(), "killed after 300ms") {
		t.Errorf("err %v, want killed after 300ms", err)
	}
	if got == nil || got.Stdout != "started\n" || got.ExitCode != -1 {
		t.Errorf("result %+v, want the output so far and exit -1", got)
	}
	if d := time.Since(start); d > execWaitDelay {
		t.Errorf("took %v: the group was not killed", d)
	}
}
