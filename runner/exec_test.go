package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// fakeExecAgent is a control channel whose guest end answers every exec
// request (its run n from 1) with answer's result and error text.
func fakeExecAgent(t *testing.T, answer func(n int) (wire.ExecResult, string)) *control {
	t.Helper()
	host, guest := net.Pipe()
	conn := wire.NewConn(guest)
	go func() {
		for n := 1; ; n++ {
			m, err := conn.Recv()
			if err != nil {
				return
			}
			var x wire.Exec
			if err := json.Unmarshal(m.Args, &x); err != nil || m.Op != wire.OpExec || len(x.Argv) == 0 {
				conn.Send(&wire.Message{ID: m.ID, Error: "bad request"})
				continue
			}
			res, errText := answer(n)
			conn.Send(&wire.Message{ID: m.ID, Data: wire.Encode(res), Error: errText})
		}
	}()
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close(); guest.Close() })
	return ctl
}

func TestExecStepKeepsOutput(t *testing.T) {
	// Over the agent's bound, under the line cap: the host clips it.
	huge := strings.Repeat("x", 6*wire.OutputMax)
	bounded := wire.OutputMax + len(wire.CutLine(5*wire.OutputMax))
	overCap := strings.Repeat("x", wire.MaxLine)
	for _, tc := range []struct {
		name    string
		count   int // runs of the step, every 1ms; 0 = once
		answer  func(n int) (wire.ExecResult, string)
		err     string // what the step error holds, "" = none
		runs    []int  // the runs whose output is kept
		file    string // what the first kept file holds
		stdout  string // the first kept run's stdout head
		maxFile int    // a bound on every file's size, 0 = none
	}{
		{name: "once", answer: func(int) (wire.ExecResult, string) { return wire.ExecResult{Stdout: "hello\n"}, "" },
			runs: []int{1}, file: "$ sh -c 'echo hello'\nnetns: ns1\nexit: 0\n--- stdout ---\nhello\n", stdout: "hello\n"},
		{name: "repeated keeps the first runs and the last", count: 7,
			answer: func(n int) (wire.ExecResult, string) { return wire.ExecResult{Stdout: strings.Repeat("+", n)}, "" },
			runs:   []int{1, 2, 3, 7}, file: "$ sh -c 'echo hello'\nnetns: ns1\nexit: 0\n--- stdout ---\n+\n", stdout: "+"},
		{name: "failed", answer: func(int) (wire.ExecResult, string) {
			return wire.ExecResult{ExitCode: 2, Stdout: "partial", Stderr: "boom\n"}, ""
		}, err: "sh exited 2: partial\nboom", runs: []int{1},
			file: "$ sh -c 'echo hello'\nnetns: ns1\nexit: 2\n--- stdout ---\npartial\n--- stderr ---\nboom\n", stdout: "partial"},
		{name: "killed by the agent", answer: func(int) (wire.ExecResult, string) {
			return wire.ExecResult{ExitCode: -1, Stdout: "started\n"}, "exec sh: killed after 10m0s"
		}, err: "exec sh: killed after 10m0s: started", runs: []int{1},
			file: "$ sh -c 'echo hello'\nnetns: ns1\nexit: -1\n--- stdout ---\nstarted\n", stdout: "started\n"},
		{name: "no such program", answer: func(int) (wire.ExecResult, string) { return wire.ExecResult{}, "no such program \"sh\"" },
			err: "no such program"},
		{name: "a guest that sends too much", answer: func(int) (wire.ExecResult, string) { return wire.ExecResult{Stdout: huge, Stderr: huge}, "" },
			// The host bounds each stream before it takes the head.
			runs: []int{1}, stdout: huge[:execHead] + fmt.Sprintf("\n[napilab: %d more bytes are in exec/12-1.log]\n", bounded-execHead),
			maxFile: 2*bounded + 100},
		{name: "an answer over the line cap", answer: func(int) (wire.ExecResult, string) { return wire.ExecResult{Stdout: overCap}, "" },
			// Dropped unread, and the step fails at once instead of at its deadline.
			err: "the answer was dropped: a line over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &scenarios.Scenario{Defaults: scenarios.Defaults{Deadline: scenarios.Duration(5 * time.Second)}}
			st := &scenarios.Step{Exec: &scenarios.Exec{Netns: "ns1", Argv: []string{"sh", "-c", "echo hello"}}, Pos: scenarios.Pos{Line: 12}}
			if tc.count > 0 {
				st.Every, st.Count = scenarios.Duration(time.Millisecond), tc.count
			}
			tl := newTimeline(s, 1, fakeExecAgent(t, tc.answer), nil, func(string, ...any) {})
			tl.outDir = dir
			err := tl.step(context.Background(), st)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("step error %v, want %q", err, tc.err)
			}
			rec := tl.steps[0]
			var runs []int
			for _, o := range rec.Outputs {
				runs = append(runs, o.Run)
			}
			if !slices.Equal(runs, tc.runs) {
				t.Fatalf("kept runs %v, want %v", runs, tc.runs)
			}
			logs, _ := filepath.Glob(filepath.Join(dir, "exec", "*.log"))
			if len(logs) != len(tc.runs) {
				t.Errorf("files %v, want one for each of runs %v", logs, tc.runs)
			}
			for _, o := range rec.Outputs {
				b, err := os.ReadFile(filepath.Join(dir, o.File))
				if err != nil {
					t.Fatal(err)
				}
				if tc.maxFile > 0 && len(b) > tc.maxFile {
					t.Errorf("%s: %d bytes, want at most %d", o.File, len(b), tc.maxFile)
				}
			}
			if len(tc.runs) == 0 {
				return
			}
			if rec.Iterations != max(1, tc.count) || rec.Unkept() != rec.Iterations-len(tc.runs) {
				t.Errorf("%d runs, %d unkept; want %d runs, %d kept", rec.Iterations, rec.Unkept(), max(1, tc.count), len(tc.runs))
			}
			first := rec.Outputs[0]
			if first.File != "exec/12-1.log" {
				t.Errorf("file %q, want exec/12-1.log", first.File)
			}
			if tc.file != "" {
				if b, _ := os.ReadFile(filepath.Join(dir, first.File)); string(b) != tc.file {
					t.Errorf("file holds %q, want %q", b, tc.file)
				}
			}
			if first.Stdout != tc.stdout {
				t.Errorf("stdout head %q, want %q", shorten(first.Stdout), shorten(tc.stdout))
			}
		})
	}
}

// shorten cuts the middle out of a long string for a test message.
func shorten(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

// TestExecLogNames checks that two exec steps on one line (one from an
// included file) keep apart.
func TestExecLogNames(t *testing.T) {
	tl := newTimeline(&scenarios.Scenario{}, 1, nil, nil, func(string, ...any) {})
	a, b := &scenarios.Step{Pos: scenarios.Pos{Line: 7}}, &scenarios.Step{Pos: scenarios.Pos{Line: 7}}
	if got := []string{tl.execLog(a).stem, tl.execLog(b).stem, tl.execLog(a).stem}; !reflect.DeepEqual(got, []string{"7", "7.2", "7"}) {
		t.Errorf("stems %q, want 7, 7.2, 7", got)
	}
}

func TestHead(t *testing.T) {
	for _, tc := range []struct {
		name, in, file, want string
	}{
		{"empty", "", "x.log", ""},
		{"exactly at the limit", "abcd", "x.log", "abcd"},
		{"over", "abcdef", "x.log", "abcd\n[napilab: 2 more bytes are in x.log]\n"},
		{"no file", "abcdef", "", "abcd\n[napilab: 2 more bytes were not kept]\n"},
		{"inside a character", "abcé", "x.log", "abc\n[napilab: 2 more bytes are in x.log]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := head(tc.in, 4, tc.file); got != tc.want {
				t.Errorf("head(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
