package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignals: the first signal cancels the run, the second aborts the
// cleanup, the third exits 130 at once; a cleanup stuck after the second
// exits 130 after the grace.
func TestSignals(t *testing.T) {
	t.Run("three signals", func(t *testing.T) {
		sigs := make(chan os.Signal, 3)
		exited := make(chan int, 2)
		it := watchSignals(sigs, io.Discard, time.Minute, func(c int) { exited <- c })
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
		it := watchSignals(sigs, io.Discard, 100*time.Millisecond, func(c int) { exited <- c })
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

func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}
