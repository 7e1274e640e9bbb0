package kernels

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunMakeFailure(t *testing.T) {
	hdr, body := readCapture(t, "testdata/build-error.log")
	path := filepath.Join(t.TempDir(), "out.log")
	writeFiles(t, filepath.Dir(path), map[string]string{"out.log": body})
	var lines int
	c := command{argv: []string{"sh", "-c", "cat " + path + " >&2; exit " + hdr["EXIT"]}}
	err := runMake(context.Background(), c, "bzImage", "/w/build.log", func(string) { lines++ })
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("runMake = %v, want *BuildError", err)
	}
	wantLines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if exit, _ := strconv.Atoi(hdr["EXIT"]); be.ExitCode != exit {
		t.Errorf("ExitCode = %d, want %d", be.ExitCode, exit)
	}
	if be.Cause != hdr["CAUSE"] {
		t.Errorf("Cause = %q, want %q", be.Cause, hdr["CAUSE"])
	}
	if lines != len(wantLines) || len(be.Tail) != len(wantLines) || be.Tail[len(be.Tail)-1] != wantLines[len(wantLines)-1] {
		t.Errorf("got %d lines, tail %q; want %d lines", lines, be.Tail, len(wantLines))
	}
	if want := "make bzImage failed with exit code 2: " + hdr["CAUSE"]; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestRunMakeSuccess(t *testing.T) {
	var got []string
	c := command{argv: []string{"sh", "-c", "echo '  CC      a.o'; printf 'no newline'"}}
	if err := runMake(context.Background(), c, "x", "", func(l string) { got = append(got, l) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "  CC      a.o|no newline" {
		t.Errorf("lines = %q", got)
	}
}

func TestRunCancelKillsGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The background sleep holds the output pipe; only a group kill ends it.
	c := command{argv: []string{"sh", "-c", "sleep 30 & sleep 30; wait"}}
	err := runMake(ctx, c, "bzImage", "", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("runMake = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("runMake took %v after cancel, want the group killed promptly", d)
	}
}

func TestRunStragglerDoesNotBlock(t *testing.T) {
	start := time.Now()
	c := command{argv: []string{"sh", "-c", "sleep 30 & echo started"}}
	if _, err := run(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run took %v, want stragglers killed when the child exits", d)
	}
}

// TestRunNice checks that a command with nice runs, with the children it
// started, at that niceness: the shell prints its pid and its child's,
// and each /proc/PID/stat is read while both still run.
func TestRunNice(t *testing.T) {
	own, err := strconv.Atoi(niceOf(t, "self")) // go test may run niced itself
	if err != nil {
		t.Fatal(err)
	}
	if own > 14 {
		t.Skipf("the test runs at niceness %d: no room above it", own)
	}
	for _, tc := range []struct {
		name string
		nice int
		want string
	}{
		{"nicer than lab", own + 5, strconv.Itoa(own + 5)},
		{"unset", 0, strconv.Itoa(own)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := command{argv: []string{"sh", "-c", "sleep 30 & echo $$ $!; wait"}, nice: tc.nice}
			var got []string
			_, err := run(ctx, c, func(line string) {
				for _, pid := range strings.Fields(line) {
					got = append(got, niceOf(t, pid))
				}
				cancel() // both seen: kill the group
			})
			if err != nil && ctx.Err() == nil {
				t.Fatal(err)
			}
			if want := []string{tc.want, tc.want}; !slices.Equal(got, want) {
				t.Errorf("niceness of the shell and its child %q, want %q", got, want)
			}
		})
	}
}

// niceOf reads the niceness of process pid (field 19 of /proc/PID/stat).
func niceOf(t *testing.T, pid string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which may hold spaces, start at 3.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return fields[19-3]
}

// TestRunCapsLines runs a command that prints one 64 MiB line: each line
// handed on and logged is capped, and what follows still arrives.
func TestRunCapsLines(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var longest int
	var got []string
	c := command{argv: []string{"sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo done"}, log: log}
	tailOut, err := run(context.Background(), c, func(line string) {
		longest = max(longest, len(line))
		got = append(got, line)
	})
	if err != nil {
		t.Fatal(err)
	}
	if longest > maxLineBytes+100 {
		t.Errorf("a line of %d bytes was handed on, want at most %d and a note", longest, maxLineBytes)
	}
	if len(got) != 2 || got[1] != "done" || !strings.HasSuffix(got[0], fmt.Sprintf(" [%d more bytes of this line dropped]", 64<<20-maxLineBytes)) {
		t.Errorf("lines = %d, want the capped line with a note, then done", len(got))
	}
	if len(tailOut) != 2 {
		t.Errorf("tail = %d lines, want 2", len(tailOut))
	}
	if fi, err := os.Stat(logPath); err != nil || fi.Size() > 2*maxLineBytes {
		t.Errorf("build.log = %v, %v; want at most one capped line", fi.Size(), err)
	}
}

// TestLogCap checks that a log shared by a build's commands stops at its
// cap with one note while the output is still read to the end.
func TestLogCap(t *testing.T) {
	var buf strings.Builder
	log := capLog(&buf, 1<<20)
	for i := range 2 {
		var lines int
		c := command{argv: []string{"sh", "-c", "yes 0123456789abcdef | head -n 131072; echo last"}, log: log}
		tailOut, err := run(context.Background(), c, func(string) { lines++ })
		if err != nil {
			t.Fatal(err)
		}
		if lines != 131073 || tailOut[len(tailOut)-1] != "last" {
			t.Errorf("run %d: %d lines ending %q, want all read", i, lines, tailOut[len(tailOut)-1])
		}
	}
	if buf.Len() > 1<<20+100 || strings.Count(buf.String(), "the rest of the output is not logged") != 1 {
		t.Errorf("log = %d bytes, want at most 1 MiB and one note", buf.Len())
	}
}
