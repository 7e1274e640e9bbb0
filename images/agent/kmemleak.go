package agent

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// kmemleakFile is kmemleak's debugfs control file (debug kernels only).
const kmemleakFile = "/sys/kernel/debug/kmemleak"

// kmemleakMinAge is kmemleak's MSECS_MIN_AGE: it never reports an object
// younger than this, and an object must also keep its checksum across two
// scans, hence the scan, wait, scan.
const kmemleakMinAge = 5 * time.Second

func hasKmemleak() bool {
	_, err := os.Stat(kmemleakFile)
	return err == nil
}

// kmemleak scans (a write of "scan" returns when the scan is done), waits
// out the minimum age, scans again and reads the report, with the clock
// readings that date each object.
func kmemleak() (*wire.KmemleakReport, error) {
	start := time.Now()
	if !hasKmemleak() {
		return nil, errors.New("this kernel has no kmemleak (" + kmemleakFile + ")")
	}
	scan := func() error {
		return unsignalled(func() error { return os.WriteFile(kmemleakFile, []byte("scan"), 0) })
	}
	var rep wire.KmemleakReport
	var err error
	if err = scan(); err != nil {
		return nil, err
	}
	if rep.Clock[0], err = ticks(); err != nil {
		return nil, err
	}
	time.Sleep(kmemleakMinAge)
	if err = scan(); err != nil {
		return nil, err
	}
	if rep.Clock[1], err = ticks(); err != nil {
		return nil, err
	}
	f, err := os.Open(kmemleakFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A leaking kernel can report without end: keep a bounded head.
	data, err := io.ReadAll(io.LimitReader(f, wire.OutputMax))
	if err != nil {
		return nil, err
	}
	rep.Report, rep.Seconds = string(data), time.Since(start).Seconds()
	return &rep, nil
}

// ticks reads jiffies from /proc/timer_list ("jiffies: N"), with the uptime.
func ticks() (wire.TickPoint, error) {
	f, err := os.Open("/proc/timer_list")
	if err != nil {
		return wire.TickPoint{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(sc.Bytes()), []byte("jiffies: ")); ok {
			j, err := strconv.ParseUint(string(v), 10, 64)
			return wire.TickPoint{Jiffies: j, Uptime: uptime()}, err
		}
	}
	return wire.TickPoint{}, errors.New("/proc/timer_list has no jiffies line")
}

// unsignalled runs f on a thread of its own that blocks every signal, and
// the thread exits with it. A kmemleak scan run by a task with a signal
// pending stops and reports nothing, yet the write of "scan" succeeds
// (scan_should_stop, mm/kmemleak.c:1304 of 6.1): a signal the kernel
// hands this thread (a SIGCHLD of the agent's children, the Go runtime's
// SIGURG) would silently turn a leaking kernel's report empty.
func unsignalled(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var all unix.Sigset_t
		for i := range all.Val {
			all.Val[i] = ^uint64(0)
		}
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, nil); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}
