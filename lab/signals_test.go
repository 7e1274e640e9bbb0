package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestSignals: for a command that boots guests the first signal cancels
// the run, the second aborts the cleanup, the third exits 130 at once; a
// cleanup stuck after the second exits 130 after the grace.
func TestSignals(t *testing.T) {
	t.Run("three signals", func(t *testing.T) {
		sigs := make(chan os.Signal, 3)
		exited := make(chan int, 2)
		it := watchSignals(sigs, io.Discard, stopGuest, time.Minute, func(c int) { exited <- c })
		abort := it.abort
		sigs <- syscall.SIGINT
		waitDone(t, it.ctx, "the run context after the first signal")
		if abort.Err() != nil {
			t.Fatal("the first signal aborted the cleanup")
		}
		sigs <- syscall.SIGINT
		waitDone(t, abort, "the abort context after the second signal")
		sigs <- syscall.SIGINT
		select {
		case c := <-exited:
			if c != 130 {
				t.Errorf("exit %d, want 130", c)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no exit after the third signal")
		}
		if it.code() != 130 {
			t.Errorf("code %d, want 130", it.code())
		}
	})
	t.Run("a stuck cleanup", func(t *testing.T) {
		sigs := make(chan os.Signal, 3)
		exited := make(chan int, 2)
		it := watchSignals(sigs, io.Discard, stopGuest, 100*time.Millisecond, func(c int) { exited <- c })
		sigs <- syscall.SIGTERM
		sigs <- syscall.SIGTERM
		select {
		case c := <-exited:
			if c != 128+int(syscall.SIGTERM) {
				t.Errorf("exit %d, want %d", c, 128+int(syscall.SIGTERM))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no exit after the grace")
		}
		_ = it
	})
}

// TestSignalsPerCommand: a command with nothing to clean up exits on the
// first signal; a build stops on the first and exits on the second.
func TestSignalsPerCommand(t *testing.T) {
	cases := []struct {
		name  string
		how   stopping
		sigs  []os.Signal
		want  int    // exit code
		stops bool   // the first signal cancelled the run context
		said  string // on stderr
	}{
		{name: "lint, SIGTERM", how: stopAtOnce, sigs: []os.Signal{syscall.SIGTERM}, want: 143, said: "lab: interrupted\n"},
		{name: "lint, SIGINT", how: stopAtOnce, sigs: []os.Signal{syscall.SIGINT}, want: 130, said: "lab: interrupted\n"},
		{name: "build, two SIGTERMs", how: stopBuild, sigs: []os.Signal{syscall.SIGTERM, syscall.SIGTERM}, want: 143, stops: true,
			said: "lab: interrupted: stopping the build (again to exit at once)\nlab: exiting without cleaning up\n"},
		{name: "cache files, two SIGINTs", how: stopFiles, sigs: []os.Signal{syscall.SIGINT, syscall.SIGINT}, want: 130, stops: true,
			said: "lab: interrupted: stopping and removing partial files (again to exit at once)\nlab: exiting without cleaning up\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 3)
			exited := make(chan int, 3)
			var said bytes.Buffer
			it := watchSignals(sigs, &syncWriter{mu: &sync.Mutex{}, w: &said}, tc.how, time.Minute, func(c int) { exited <- c })
			for i, sig := range tc.sigs {
				sigs <- sig
				if i == 0 && tc.stops {
					waitDone(t, it.ctx, "the run context after the first signal")
				}
			}
			select {
			case c := <-exited:
				if c != tc.want {
					t.Errorf("exit %d, want %d", c, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no exit after %d signal(s)", len(tc.sigs))
			}
			select {
			case c := <-exited:
				t.Errorf("exited twice (%d)", c)
			default:
			}
			if said.String() != tc.said {
				t.Errorf("said %q, want %q", said.String(), tc.said)
			}
		})
	}
}

// TestEveryCommandStops: every runnable command says how it stops, and the
// command line finds it as cobra will.
func TestEveryCommandStops(t *testing.T) {
	root := newRootCmd()
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			seen[c.CommandPath()] = true
			if _, ok := commandStopping[c.CommandPath()]; !ok {
				t.Errorf("%s: not in commandStopping (say how it stops when interrupted)", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path := range commandStopping {
		if !seen[path] {
			t.Errorf("commandStopping lists %q, which is not a command", path)
		}
	}
	cases := []struct {
		name string
		args []string
		want stopping
	}{
		{name: "lint", args: []string{"scenario", "lint", "a.yaml", "-p", "x=1"}, want: stopAtOnce},
		{name: "run", args: []string{"run", "a.yaml", "--kernel", "k.yaml"}, want: stopGuest},
		{name: "build after a global flag", args: []string{"--cache", "/tmp/c", "kernel", "build", "k.yaml"}, want: stopBuild},
		{name: "kernel list", args: []string{"kernel", "list"}, want: stopAtOnce},
		{name: "help", args: []string{"help", "run"}, want: stopAtOnce},
		{name: "a typo", args: []string{"rnu"}, want: stopAtOnce},
	}
	for _, tc := range cases {
		if got := stoppingFor(newRootCmd(), tc.args); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}
