package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/splat"
	"napilab/runner/vm"
)

// The hostile guest: these tests drive the real console and control code
// with a fake QEMU (this test binary, printing a flood to stdout) and a fake
// agent over net.Pipe, and check the host stays within its bounds.

// TestFakeQEMU is the fake QEMU's body when NAPILAB_FLOOD is set: it prints
// NAPILAB_FLOOD_BYTES bytes of the kind named by NAPILAB_FLOOD and exits.
func TestFakeQEMU(t *testing.T) {
	kind := os.Getenv("NAPILAB_FLOOD")
	if kind == "" {
		t.Skip("only the fake QEMU of the hostile-guest tests")
	}
	n, _ := strconv.ParseInt(os.Getenv("NAPILAB_FLOOD_BYTES"), 10, 64)
	floodTo(os.Stdout, kind, n)
	os.Exit(0)
}

// floodTo writes a boot line, then about n bytes of a flood: "lines"
// (printk lines, a WARNING report in the middle), "long" (one line without
// a newline) or "binary" (random bytes).
func floodTo(w io.Writer, kind string, n int64) {
	fmt.Fprintf(w, "[    0.000000] Linux version 6.1.0-napilab\n")
	var chunk []byte
	switch kind {
	case "lines":
		for len(chunk) < 64<<10 {
			chunk = append(chunk, "[   12.345678] napilab: flood line of a hostile kernel, nothing to see\n"...)
		}
	case "long":
		chunk = bytes.Repeat([]byte("x"), 64<<10)
	case "binary":
		chunk = make([]byte, 64<<10)
		rand.New(rand.NewSource(1)).Read(chunk)
	}
	for sent := int64(0); sent < n; sent += int64(len(chunk)) {
		if kind == "lines" && sent < n/2 && sent+int64(len(chunk)) >= n/2 {
			io.WriteString(w, splatReport)
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// splatReport is a WARNING as the console shows it.
const splatReport = `[   13.000000] ------------[ cut here ]------------
[   13.000001] WARNING: CPU: 1 PID: 77 at net/core/dev.c:6800 napi_disable+0x5e/0x70
[   13.000002] Call Trace:
[   13.000003]  <TASK>
[   13.000004]  napi_disable+0x5e/0x70
[   13.000005]  </TASK>
[   13.000006] ---[ end trace 0000000000000000 ]---
`

// fakeQEMU returns a QEMU whose binary floods its stdout.
func fakeQEMU(t *testing.T, dir, kind string, n int64) *vm.QEMU {
	t.Helper()
	script := filepath.Join(dir, "qemu")
	body := fmt.Sprintf("#!/bin/sh\nNAPILAB_FLOOD=%s NAPILAB_FLOOD_BYTES=%d exec %q -test.run='^TestFakeQEMU$' -- \"$@\"\n", kind, n, os.Args[0])
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &vm.QEMU{Binary: script, Accel: "tcg", CPUs: 1, MemoryMB: 128, Kernel: "bzImage", Initrd: "initrd", AsCaller: true}
}

// heapPeak samples the Go heap until stop is called and returns its peak.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

var markerRe = regexp.MustCompile(`--- napilab: console lines (\d+)-(\d+) \((\d+) bytes\) not kept`)

// consoleDiskBound is the most console.log may hold: the live head, the
// kept tail and splats, and the markers.
func consoleDiskBound(l consoleLimits) int64 { return int64(l.file+l.tail+l.pin) + 4<<10 }

// consoleMemBound is the most the host's heap may grow by while the
// console reads a flood: the kept lines, the read buffers, and the garbage
// the collector has not caught up with (GOGC=100 lets the heap double, and
// the ring's slice grows by doubling).
func consoleMemBound(l consoleLimits) uint64 { return 4*uint64(l.head+l.tail+l.pin) + 8<<20 }

// consoleLiveBound is the most the kept lines may hold after a collection.
func consoleLiveBound(l consoleLimits) uint64 { return 3*uint64(l.head+l.tail+l.pin)/2 + 2<<20 }

// floodReport is what TestConsoleChild measured.
type floodReport struct {
	HeapPeak, HeapKept, PeakRSS uint64 // bytes over the child's base heap; VmHWM
	Lines                       int
	Dropped                     *results.Dropped
	Splats                      []results.Splat
	SplatTimed                  bool
}

// TestConsoleChild reads a fake QEMU's flood with the real console, in a
// process of its own so that its heap and peak RSS are the console's.
func TestConsoleChild(t *testing.T) {
	kind := os.Getenv("NAPILAB_CONSOLE_CHILD")
	if kind == "" {
		t.Skip("only the child of TestConsoleFloodBounded")
	}
	n, _ := strconv.ParseInt(os.Getenv("NAPILAB_FLOOD_BYTES"), 10, 64)
	f, err := os.Create(os.Getenv("NAPILAB_CONSOLE_LOG"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := heapPeak()
	// The parent's temporary folder: this process ends in os.Exit.
	c := newConsole(f)
	v, err := fakeQEMU(t, filepath.Dir(f.Name()), kind, n).Start(c.copy)
	if err != nil {
		t.Fatal(err)
	}
	<-v.Done()
	var rep floodReport
	peak := stop()
	rep.HeapPeak = peak - min(peak, base.HeapInuse)
	runtime.GC()
	var live runtime.MemStats
	runtime.ReadMemStats(&live)
	rep.HeapKept = live.HeapInuse - min(live.HeapInuse, base.HeapInuse)
	rep.Lines, rep.Dropped = c.count(), c.dropped()
	rep.Splats = splat.FindLines(c.lines())
	rep.SplatTimed = len(rep.Splats) == 1 && !c.lineTime(rep.Splats[0].Line).IsZero()
	status, _ := os.ReadFile("/proc/self/status")
	if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
		kb, _ := strconv.ParseUint(string(m[1]), 10, 64)
		rep.PeakRSS = kb << 10
	}
	f.Close()
	b, _ := json.Marshal(rep)
	fmt.Printf("\nFLOOD %s\n", b)
	os.Exit(0)
}

// consoleFlood runs TestConsoleChild on a flood of n bytes.
func consoleFlood(t *testing.T, kind string, n int64) (floodReport, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "console.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestConsoleChild$")
	cmd.Env = append(os.Environ(), "NAPILAB_CONSOLE_CHILD="+kind, "NAPILAB_FLOOD_BYTES="+strconv.FormatInt(n, 10), "NAPILAB_CONSOLE_LOG="+logPath)
	out, err := cmd.CombinedOutput()
	_, js, ok := strings.Cut(string(out), "\nFLOOD ")
	var rep floodReport
	if err != nil || !ok || json.Unmarshal([]byte(strings.TrimSpace(js)), &rep) != nil {
		t.Fatalf("the console child: %v\n%s", err, out)
	}
	return rep, logPath
}

// TestConsoleFloodBounded: whatever the guest prints, the console keeps and
// writes at most its bounds. The flood is 48 MiB: well past every bound,
// so a bigger one costs the same (NAPILAB_FLOOD_MIB sets another size).
func TestConsoleFloodBounded(t *testing.T) {
	flood := int64(48 << 20)
	if mib, _ := strconv.ParseInt(os.Getenv("NAPILAB_FLOOD_MIB"), 10, 64); mib > 0 {
		flood = mib << 20
	}
	lim := defaultConsoleLimits
	for _, kind := range []string{"lines", "long", "binary"} {
		t.Run(kind, func(t *testing.T) {
			start := time.Now()
			rep, logPath := consoleFlood(t, kind, flood)
			st, err := os.Stat(logPath)
			if err != nil {
				t.Fatal(err)
			}
			mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
			t.Logf("%s flood of %d MiB in %.1fs: peak RSS %.1f MiB, heap peak +%.1f MiB, kept +%.1f MiB, console.log %.1f MiB, %d lines",
				kind, flood>>20, time.Since(start).Seconds(), mib(rep.PeakRSS), mib(rep.HeapPeak), mib(rep.HeapKept), mib(uint64(st.Size())), rep.Lines)
			if rep.HeapPeak > consoleMemBound(lim) {
				t.Errorf("the heap grew by %d bytes, want at most %d", rep.HeapPeak, consoleMemBound(lim))
			}
			if rep.HeapKept > consoleLiveBound(lim) {
				t.Errorf("the console keeps %d bytes, want at most %d", rep.HeapKept, consoleLiveBound(lim))
			}
			if rep.PeakRSS > consoleRSSBound {
				t.Errorf("peak RSS %d bytes, want at most %d", rep.PeakRSS, consoleRSSBound)
			}
			if st.Size() > consoleDiskBound(lim) {
				t.Errorf("console.log is %d bytes, want at most %d", st.Size(), consoleDiskBound(lim))
			}
			log, _ := os.ReadFile(logPath)
			if !strings.HasPrefix(string(log), "[    0.000000] Linux version") {
				t.Errorf("the boot line was not kept: %.80q", log)
			}
			d := rep.Dropped
			if d == nil {
				t.Fatal("nothing recorded as dropped")
			}
			switch kind {
			case "lines":
				// The markers in console.log add up to what was dropped.
				var lines, bytes int64
				for _, m := range markerRe.FindAllStringSubmatch(string(log), -1) {
					from, _ := strconv.ParseInt(m[1], 10, 64)
					to, _ := strconv.ParseInt(m[2], 10, 64)
					n, _ := strconv.ParseInt(m[3], 10, 64)
					lines, bytes = lines+to-from+1, bytes+n
				}
				if d.ConsoleLines == 0 || lines != d.ConsoleLines || bytes != d.ConsoleBytes {
					t.Errorf("dropped %+v; console.log's markers say %d lines, %d bytes", d, lines, bytes)
				}
				// The WARNING was in the dropped middle: pinned, it is still found.
				if len(rep.Splats) != 1 || rep.Splats[0].Title != "WARNING in napi_disable" || !rep.SplatTimed {
					t.Errorf("splats %+v, want the WARNING from the middle with its time", rep.Splats)
				}
				if !strings.Contains(string(log), "WARNING: CPU: 1 PID: 77") {
					t.Error("console.log lost the WARNING")
				}
			case "long":
				if d.LongLines != 1 || rep.Lines != 2 {
					t.Errorf("dropped %+v over %d lines, want one line cut", d, rep.Lines)
				}
			}
		})
	}
}

// consoleRSSBound is the peak RSS of a test process reading any flood:
// the test binary itself (about 15 MiB) and the console's heap peak.
const consoleRSSBound = 64 << 20

// TestConsoleKeepsNumbers checks lines keep their place in the whole
// console across what the ring dropped.
func TestConsoleKeepsNumbers(t *testing.T) {
	var log bytes.Buffer
	c := newConsole(&log)
	c.lim = consoleLimits{line: 16, head: 3 * (lineCost + 6), tail: 4 * (lineCost + 6), pin: 13*(lineCost+6) + 4, file: 3 * 7}
	var in strings.Builder
	for i := 1; i <= 100; i++ {
		if i == 50 {
			in.WriteString("BUG: oh no\n") // line 50, pinned with what follows
		}
		fmt.Fprintf(&in, "line%02d\n", i)
	}
	in.WriteString(strings.Repeat("y", 100) + "\n")
	c.copy(strings.NewReader(in.String()))
	if c.count() != 102 {
		t.Fatalf("count %d, want 102", c.count())
	}
	var nums []int
	for _, l := range c.lines() {
		nums = append(nums, l.N)
	}
	// The head (1-3), the pinned report (50 on, within its budget: 13
	// lines), the tail ring (the last 3, within its bytes).
	want := "[1 2 3 50 51 52 53 54 55 56 57 58 59 60 61 62 100 101 102]"
	if fmt.Sprint(nums) != want {
		t.Errorf("kept lines %v, want %s", nums, want)
	}
	if c.lineTime(50).IsZero() || !c.lineTime(20).IsZero() {
		t.Errorf("lineTime(50) %v, lineTime(20) %v: want the pinned one only", c.lineTime(50), c.lineTime(20))
	}
	cutLine := "yyyyyyyyyyyyyyyy [napilab: line cut, 85 bytes dropped]"
	if got := c.tail(2); got != "line100\n"+cutLine {
		t.Errorf("tail %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if !c.waitFor(ctx, "line99", 60) || c.waitFor(ctx, "line98", 60) {
		t.Error("waitFor did not see the kept line 99 or saw the dropped 98")
	}
	wantLog := "line01\nline02\nline03\n" +
		"--- napilab: console lines 4-49 (" + strconv.Itoa(46*7) + " bytes) not kept: over the console bounds ---\n" +
		"BUG: oh no\nline50\n"
	if !strings.HasPrefix(log.String(), wantLog) || !strings.Contains(log.String(), "line61\n--- napilab: console lines 63-99 (") ||
		!strings.HasSuffix(log.String(), "line99\nline100\n"+cutLine+"\n") {
		t.Errorf("console.log:\n%s", log.String())
	}
	d := c.dropped()
	if d == nil || d.ConsoleLines != 46+37 || d.LongLines != 1 || d.ConsoleWhere != "lines 4-99" {
		t.Errorf("dropped %+v", d)
	}
}

// guestPipe is a control channel whose guest end is handed to serve.
func guestPipe(t *testing.T, serve func(guest net.Conn)) *control {
	t.Helper()
	host, guest := net.Pipe()
	go serve(guest)
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close(); guest.Close() })
	return ctl
}

// answerHello reads requests and answers each after writing junk first.
func answerHello(guest net.Conn, junk func(w io.Writer)) {
	conn := wire.NewConn(guest)
	for {
		m, err := conn.Recv()
		if err != nil {
			return
		}
		junk(guest)
		conn.Send(&wire.Message{ID: m.ID, Data: wire.Encode(wire.Hello{Kernel: "6.1.0"})})
	}
}

func TestControlFloodBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		junk          func(w io.Writer)
		long, garbage int64
	}{
		{"garbage lines", func(w io.Writer) {
			for i := 0; i < 1000; i++ {
				io.WriteString(w, "\x00\xff not json {\n{\"id\": oops\n")
			}
		}, 0, 2000},
		{"endless answers to nobody", func(w io.Writer) {
			for i := 0; i < 20000; i++ {
				fmt.Fprintf(w, "{\"id\":%d,\"data\":\"x\"}\n", 1000+i)
			}
		}, 0, 0},
		{"a 100 MiB line", func(w io.Writer) {
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			io.WriteString(w, `{"event":"log","data":"`)
			for i := 0; i < 100; i++ {
				w.Write(chunk)
			}
			io.WriteString(w, "\"}\n")
		}, 1, 0},
		{"a 100 MiB answer", func(w io.Writer) {
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			io.WriteString(w, `{"id":99999,"data":"`)
			for i := 0; i < 100; i++ {
				w.Write(chunk)
			}
			io.WriteString(w, "\"}\n")
		}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := heapPeak()
			ctl := guestPipe(t, func(g net.Conn) { answerHello(g, tc.junk) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var h wire.Hello
			err := ctl.call(ctx, wire.OpHello, nil, &h)
			peak := stop()
			if err != nil || h.Kernel != "6.1.0" {
				t.Fatalf("hello after the flood: %v %+v", err, h)
			}
			grown := peak - min(peak, base.HeapInuse)
			t.Logf("heap grew by %.1f MiB", float64(grown)/(1<<20))
			// Two lines at the cap and the read buffer, with GC slack.
			if bound := uint64(4*wire.MaxLine + 8<<20); grown > bound {
				t.Errorf("the heap grew by %d bytes, want at most %d", grown, bound)
			}
			if d := ctl.dropped(); d.Long != tc.long || d.Garbage != tc.garbage {
				t.Errorf("dropped %+v, want %d long and %d garbage", d, tc.long, tc.garbage)
			}
		})
	}
}

// TestSendToDeafAgentTimesOut: a guest that never reads must not block a
// call past its deadline, nor leave its pending entry behind.
func TestSendToDeafAgentTimesOut(t *testing.T) {
	ctl := guestPipe(t, func(net.Conn) {}) // never reads
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ctl.call(ctx, wire.OpStacks, nil, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call error %v, want a deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a send to a guest that does not read blocked past its deadline")
	}
	ctl.mu.Lock()
	n := len(ctl.pending)
	ctl.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending entries left after a failed send", n)
	}
}

// brokenConn fails every write, as a stream cut inside a line does.
type brokenConn struct {
	net.Conn
	writes atomic.Int64
	closed chan struct{}
}

func (b *brokenConn) Write([]byte) (int, error)        { b.writes.Add(1); return 0, errors.New("broken") }
func (b *brokenConn) Read([]byte) (int, error)         { <-b.closed; return 0, io.EOF }
func (b *brokenConn) Close() error                     { return nil }
func (b *brokenConn) SetWriteDeadline(time.Time) error { return nil }

// TestWaitReadyBacksOff: hellos that fail at once are spaced, not a tight loop.
func TestWaitReadyBacksOff(t *testing.T) {
	b := &brokenConn{closed: make(chan struct{})}
	defer close(b.closed)
	ctl := newControl(b)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := ctl.waitReady(ctx); err == nil {
		t.Fatal("ready through a broken stream")
	}
	time.Sleep(50 * time.Millisecond)
	// 50+100+200 ms of backoff: four tries, five at most.
	if n := b.writes.Load(); n > 6 {
		t.Errorf("%d hellos in 500ms, want a backoff", n)
	}
	ctl.mu.Lock()
	n := len(ctl.pending)
	ctl.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending entries left after failed sends", n)
	}
}

// TestDroppedInResult: what was dropped reaches the result, without a verdict.
func TestDroppedInResult(t *testing.T) {
	c := newConsole(io.Discard)
	c.lim.tail = 10 * lineCost
	c.lim.head, c.lim.file = 0, 0
	c.copy(strings.NewReader(strings.Repeat("flood\n", 100)))
	ctl := guestPipe(t, func(g net.Conn) { answerHello(g, func(w io.Writer) { io.WriteString(w, "garbage\n") }) })
	if err := ctl.call(context.Background(), wire.OpHello, nil, nil); err != nil {
		t.Fatal(err)
	}
	r := &run{guest: &qemuGuest{console: c}, ctl: ctl, cfg: Config{Logf: t.Logf}}
	d := r.dropped()
	if d == nil || d.ConsoleLines != 100-9 || d.ConsoleBytes != 6*(100-9) || d.Garbage != 1 {
		t.Fatalf("dropped %+v", d)
	}
	if want := "guest output over the bounds: 91 console lines (546 bytes, lines 1-91) not kept; 0 control lines too long, 1 not JSON"; d.String() != want {
		t.Errorf("%q, want %q", d.String(), want)
	}
	r = &run{guest: &qemuGuest{console: newConsole(io.Discard)}, cfg: Config{Logf: t.Logf}}
	if d := r.dropped(); d != nil {
		t.Errorf("dropped %+v from a quiet guest, want nil", d)
	}
}

// TestGuestConsoleFlood: a real guest floods its serial console around a
// real WARNING (lkdtm). With the console's bounds shrunk so that a flood a
// TCG UART can print in seconds is past them, the run still ends FAIL on the
// WARNING, placed on its step, with console.log within its cap and the drop
// recorded.
func TestGuestConsoleFlood(t *testing.T) {
	k, img := guest(t)
	saved := defaultConsoleLimits
	defaultConsoleLimits = consoleLimits{line: 4 << 10, head: 64 << 10, tail: 128 << 10, pin: 64 << 10, file: 256 << 10}
	defer func() { defaultConsoleLimits = saved }()
	// The stock image has no shell: the agent's writes to /dev/console
	// flood it, floodWrites of floodBlock before and after the WARNING.
	const floodWrites = 200
	block := strings.Repeat("[flood] a hostile guest fills the console, line after line......\n", 60)
	flood := fmt.Sprintf("    write: {path: /dev/console, value: %q}\n    every: 1ms\n    count: %d\n", block, floodWrites)
	scenario := "# A hostile guest floods its serial console around a real WARNING.\n" +
		"name: console-flood\nmachine: {cpus: 1}\ndefaults: {deadline: 100s}\ntimeline:\n" +
		"  - name: flood-before\n" + flood +
		"  - name: provoke\n    write: {path: /sys/kernel/debug/provoke-crash/DIRECT, value: WARNING}\n" +
		"  - name: flood-after\n" + flood +
		"asserts:\n  - no-splat: {}\n"
	file := filepath.Join(t.TempDir(), "console-flood.yaml")
	if err := os.WriteFile(file, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var dir string
	res := runScenario(t, file, k, img, func(c *testConfig) { dir = c.OutDir })
	if res.Verdict != results.Fail || len(res.Splats) != 1 || res.Splats[0].Title != "WARNING in lkdtm_WARNING" || res.Splats[0].Step != "provoke" {
		t.Errorf("verdict %s %v splats %+v, want FAIL with the WARNING during provoke", res.Verdict, res.Reasons, res.Splats)
	}
	st, err := os.Stat(filepath.Join(dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	if bound := consoleDiskBound(defaultConsoleLimits); st.Size() > bound {
		t.Errorf("console.log is %d bytes, want at most %d", st.Size(), bound)
	}
	if res.Dropped == nil || res.Dropped.ConsoleLines == 0 {
		t.Errorf("dropped %+v, want the flood's middle", res.Dropped)
	}
	floodBytes := float64(floodWrites * len(block))
	for _, s := range res.Steps {
		if strings.HasPrefix(s.Name, "flood") && s.Duration > 0 {
			t.Logf("%s: %.0f KiB in %.1fs: %.1f KiB/s through the serial console", s.Name, floodBytes/1024, s.Duration, floodBytes/1024/s.Duration)
		}
	}
	if res.Dropped != nil {
		t.Logf("console.log %d bytes; dropped %+v", st.Size(), *res.Dropped)
	}
}
