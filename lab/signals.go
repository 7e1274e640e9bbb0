package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"napilab/runner"
)

// abortGrace is how long a cleanup may still run after the second signal
// before lab exits anyway.
const abortGrace = 10 * time.Second

// stopping says what a command does when a signal interrupts it. A lab
// ended by a signal exits 128+its number (130 for Ctrl-C, 143 for SIGTERM).
type stopping struct {
	// first is said on the first signal, which cancels the run context so
	// the command stops and cleans up; "" exits at once instead (the
	// command has nothing to clean up).
	first string
	// second is said on the second signal, which cancels the abort
	// context (cleanup skips the guest) and exits after the grace; ""
	// exits at once instead. A third signal always exits at once.
	second string
}

var (
	// stopAtOnce: reading and printing, nothing to clean up.
	stopAtOnce = stopping{}
	// stopGuest: commands that boot guests (and may build first).
	stopGuest = stopping{
		first:  "interrupted: stopping the run: cleaning up and shutting the guest down (again to skip the cleanup)",
		second: "skipping the cleanup: killing QEMU (again to exit at once)",
	}
	// stopBuild: kernel builds, whose make runs in its own process group.
	stopBuild = stopping{first: "interrupted: stopping the build (again to exit at once)"}
	// stopFiles: commands that write into the cache or a tree.
	stopFiles = stopping{first: "interrupted: stopping and removing partial files (again to exit at once)"}
)

// commandStopping is how each command stops, by command path. Every
// runnable command is listed (TestEveryCommandStops); cobra's own (help,
// completion) exit at once.
var commandStopping = map[string]stopping{
	"lab doctor":             stopAtOnce,
	"lab kernel build":       stopBuild,
	"lab kernel list":        stopAtOnce,
	"lab kernel gc":          stopFiles,
	"lab kernel pack":        stopFiles,
	"lab kernel unpack":      stopFiles,
	"lab kselftest":          stopGuest,
	"lab run":                stopGuest,
	"lab repro":              stopGuest,
	"lab compare":            stopGuest,
	"lab bisect":             stopGuest,
	"lab shell":              stopGuest,
	"lab explore":            stopGuest,
	"lab explore triage":     stopGuest,
	"lab baseline record":    stopGuest,
	"lab baseline list":      stopAtOnce,
	"lab baseline show":      stopAtOnce,
	"lab baseline rm":        stopAtOnce,
	"lab patches show":       stopAtOnce,
	"lab patches check":      stopFiles,
	"lab report":             stopAtOnce,
	"lab results list":       stopAtOnce,
	"lab results merge":      stopAtOnce,
	"lab results invariants": stopAtOnce,
	"lab results noise":      stopAtOnce,
	"lab scenario lint":      stopAtOnce,
	"lab scenario explain":   stopAtOnce,
	"lab scenario schema":    stopAtOnce,
	"lab scenario metrics":   stopAtOnce,
	"lab scenario new":       stopAtOnce, // one small write
}

// stoppingFor is how the command args name stops; cobra finds it as
// Execute will. What it does not find (help, completion, a typo) exits at
// once.
func stoppingFor(root *cobra.Command, args []string) stopping {
	cmd, _, err := root.Find(args)
	if err != nil {
		return stopAtOnce
	}
	return commandStopping[cmd.CommandPath()]
}

// interrupts turns signals into cancellation, as how says: the first
// cancels the run context (or exits), the second cancels the abort context
// (or exits), a third, or a cleanup still running grace after the second,
// exits at once.
type interrupts struct {
	ctx   context.Context // the run context; it carries abort
	abort context.Context // ends on the second signal
	mu    sync.Mutex
	first os.Signal // nil until a signal came
}

// watchSignals starts turning sigs into cancellation; exit ends the process.
func watchSignals(sigs <-chan os.Signal, stderr io.Writer, how stopping, grace time.Duration, exit func(int)) *interrupts {
	abort, abortNow := context.WithCancel(context.Background())
	ctx, stop := context.WithCancel(runner.WithAbort(context.Background(), abort))
	it := &interrupts{ctx: ctx, abort: abort}
	go func() {
		n := 0
		for sig := range sigs {
			n++
			switch {
			case n == 1:
				it.mu.Lock()
				it.first = sig
				it.mu.Unlock()
				if how.first == "" {
					fmt.Fprintln(stderr, "lab: interrupted")
					exit(it.code())
					return
				}
				fmt.Fprintln(stderr, "lab:", how.first)
				stop()
			case n == 2 && how.second != "":
				fmt.Fprintln(stderr, "lab:", how.second)
				abortNow()
				time.AfterFunc(grace, func() {
					fmt.Fprintf(stderr, "lab: the cleanup is still running after %v: exiting\n", grace)
					exit(it.code())
				})
			default:
				if n == 2 {
					fmt.Fprintln(stderr, "lab: exiting without cleaning up")
				}
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
