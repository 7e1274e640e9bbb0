package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"napilab/images/wire"
	"napilab/results"
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
func fakeQEMU(t *testing.T, kind string, n int64) *QEMU {
	t.Helper()
	script := filepath.Join(t.TempDir(), "qemu")
	body := fmt.Sprintf("#!/bin/sh\nNAPILAB_FLOOD=%s NAPILAB_FLOOD_BYTES=%d exec %q -test.run='^TestFakeQEMU$' -- \"$@\"\n", kind, n, os.Args[0])
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &QEMU{Binary: script, Accel: "tcg", CPUs: 1, MemoryMB: 128, Kernel: "bzImage", Initrd: "initrd", Control: "ctl.sock"}
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
func consoleMemBound(l consoleLimits) uint64 { return 3*uint64(l.head+l.tail+l.pin) + 8<<20 }

// consoleLiveBound is the most the kept lines may hold after a collection.
func consoleLiveBound(l consoleLimits) uint64 { return 3*uint64(l.head+l.tail+l.pin)/2 + 2<<20 }

func TestConsoleFloodBounded(t *testing.T) {
	const flood = 48 << 20
	for _, kind := range []string{"lines", "long", "binary"} {
		t.Run(kind, func(t *testing.T) {
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			logPath := filepath.Join(t.TempDir(), "console.log")
			f, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			stop := heapPeak()
			v, err := fakeQEMU(t, kind, flood).start(f)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-v.done:
			case <-time.After(60 * time.Second):
				v.stop(0)
				t.Fatal("the fake QEMU did not end")
			}
			peak := stop()
			runtime.GC()
			var live runtime.MemStats
			runtime.ReadMemStats(&live)
			st, _ := f.Stat()
			lim := defaultConsoleLimits
			t.Logf("%s flood of %d MiB: heap peak +%.1f MiB, kept +%.1f MiB (base %.1f MiB), console.log %.1f MiB, %d lines",
				kind, flood>>20, float64(peak-min(peak, base.HeapInuse))/(1<<20), float64(live.HeapInuse-min(live.HeapInuse, base.HeapInuse))/(1<<20),
				float64(base.HeapInuse)/(1<<20), float64(st.Size())/(1<<20), v.console.count())
			if grown := peak - min(peak, base.HeapInuse); grown > consoleMemBound(lim) {
				t.Errorf("the heap grew by %d bytes, want at most %d", grown, consoleMemBound(lim))
			}
			if kept := live.HeapInuse - min(live.HeapInuse, base.HeapInuse); kept > consoleLiveBound(lim) {
				t.Errorf("the console keeps %d bytes, want at most %d", kept, consoleLiveBound(lim))
			}
			if st.Size() > consoleDiskBound(lim) {
				t.Errorf("console.log is %d bytes, want at most %d", st.Size(), consoleDiskBound(lim))
			}
			log, _ := os.ReadFile(logPath)
			if !strings.HasPrefix(string(log), "[    0.000000] Linux version") || !strings.Contains(string(v.console.text()), "Linux version") {
				t.Errorf("the boot line was not kept: %.80q", log)
			}
			d := v.console.dropped()
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
				sp := results.FindSplatsLines(v.console.lines())
				if len(sp) != 1 || sp[0].Title != "WARNING in napi_disable" || v.console.lineTime(sp[0].Line).IsZero() {
					t.Errorf("splats %+v, want the WARNING from the middle with its time", sp)
				}
				if !strings.Contains(string(log), "WARNING: CPU: 1 PID: 77") {
					t.Error("console.log lost the WARNING")
				}
			case "long":
				if d.LongLines != 1 || v.console.count() != 2 {
					t.Errorf("dropped %+v over %d lines, want one line cut", d, v.console.count())
				}
			}
		})
	}
}

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
	r := &run{vm: &vm{console: c}, ctl: ctl, cfg: Config{Logf: t.Logf}}
	d := r.dropped()
	if d == nil || d.ConsoleLines != 100-9 || d.ConsoleBytes != 6*(100-9) || d.Garbage != 1 {
		t.Errorf("dropped %+v", d)
	}
	r = &run{vm: &vm{console: newConsole(io.Discard)}, cfg: Config{Logf: t.Logf}}
	if d := r.dropped(); d != nil {
		t.Errorf("dropped %+v from a quiet guest, want nil", d)
	}
}
