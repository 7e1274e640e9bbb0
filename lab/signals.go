package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"napilab/runner"
)

// abortGrace is how long a cleanup may still run after the second signal
// before lab exits anyway.
const abortGrace = 10 * time.Second

// interrupts turns signals into cancellation. The first cancels the run
// context: runs stop, then clean up (stop loads, gather evidence, shut QEMU
// down), each step under its own deadline. The second cancels the abort
// context: cleanup skips the guest, kills QEMU's process group and removes
// its folders. A third signal, or a cleanup still running grace after the
// second, exits at once. A lab ended by a signal exits 128+its number (130
// for Ctrl-C).
type interrupts struct {
	ctx   context.Context // the run context; it carries abort
	abort context.Context // ends on the second signal
	mu    sync.Mutex
	first os.Signal // nil until a signal came
}

// watchSignals starts turning sigs into cancellation; exit ends the process.
func watchSignals(sigs <-chan os.Signal, stderr io.Writer, grace time.Duration, exit func(int)) *interrupts {
	abort, abortNow := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(runner.WithAbort(context.Background(), abort))
	it := &interrupts{ctx: ctx, abort: abort}
	go func() {
		n := 0
		for sig := range sigs {
			n++
			switch n {
			case 1:
				it.mu.Lock()
				it.first = sig
				it.mu.Unlock()
				fmt.Fprintln(stderr, "lab: interrupted: cleaning up (again to skip the cleanup)")
				stop()
			case 2:
				fmt.Fprintln(stderr, "lab: skipping the cleanup: killing QEMU (again to exit at once)")
				abortNow()
				time.AfterFunc(grace, func() {
					fmt.Fprintf(stderr, "lab: the cleanup is still running after %v: exiting\n", grace)
					exit(it.code())
				})
			default:
				exit(it.code())
			}
		}
	}()
	return it
}

// code is the exit status of a lab ended by a signal, 0 if none came.
func (it *interrupts) code() int {
	it.mu.Lock()
	defer it.mu.Unlock()
	if s, ok := it.first.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 0
}
