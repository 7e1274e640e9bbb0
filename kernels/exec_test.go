package kernels

import (
	"context"
	"errors"
	"path/filepath"
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
