package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"napilab/kernels"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// feedBuild sends a build's reports to p: config, then one compile report
// per object (every `every`), then link and done.
func feedBuild(p *progressPrinter, clock *fakeClock, objects, total int, every time.Duration) {
	start := clock.t
	send := func(phase string, n int) {
		p.report(kernels.Progress{Spec: "stock", Phase: phase, Objects: n, Total: total, Elapsed: clock.t.Sub(start)})
	}
	send(kernels.PhaseConfig, 0)
	clock.t = clock.t.Add(5 * time.Second)
	send(kernels.PhaseCompile, 0)
	for n := 1; n <= objects; n++ {
		clock.t = clock.t.Add(every)
		send(kernels.PhaseCompile, n)
	}
	send(kernels.PhaseLink, objects)
	send(kernels.PhaseLink, objects)
	send(kernels.PhaseDone, objects)
}

// printedObjects returns, per line of a log, its phase and object count.
func printedObjects(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			t.Fatalf("bad progress line %q", line)
		}
		if f[0] != "stock" {
			t.Fatalf("progress line %q does not name its spec", line)
		}
		got = append(got, f[1]+" "+f[2])
	}
	return got
}

func TestProgressLogThrottle(t *testing.T) {
	tests := []struct {
		name           string
		objects, total int
		every          time.Duration
		want           []string
	}{
		{"a line per tenth of the estimate", 1000, 1000, 100 * time.Millisecond, []string{
			"config 0", "compile 0/1000", "compile 100/1000", "compile 200/1000", "compile 300/1000",
			"compile 400/1000", "compile 500/1000", "compile 600/1000", "compile 700/1000",
			"compile 800/1000", "compile 900/1000", "compile 1000/1000", "link 1000"}},
		{"a line per 30 s when tenths are slow", 100, 1000, 10 * time.Second, []string{
			"config 0", "compile 0/1000", "compile 3/1000", "compile 6/1000", "compile 9/1000",
			"compile 12/1000", "compile 15/1000", "compile 18/1000", "compile 21/1000", "compile 24/1000",
			"compile 27/1000", "compile 30/1000", "compile 33/1000", "compile 36/1000", "compile 39/1000",
			"compile 42/1000", "compile 45/1000", "compile 48/1000", "compile 51/1000", "compile 54/1000",
			"compile 57/1000", "compile 60/1000", "compile 63/1000", "compile 66/1000", "compile 69/1000",
			"compile 72/1000", "compile 75/1000", "compile 78/1000", "compile 81/1000", "compile 84/1000",
			"compile 87/1000", "compile 90/1000", "compile 93/1000", "compile 96/1000", "compile 99/1000",
			"link 100"}},
		{"no estimate: objects done every 30 s", 200, 0, time.Second, []string{
			"config 0", "compile 0", "compile 30", "compile 60", "compile 90", "compile 120",
			"compile 150", "compile 180", "link 200"}},
		{"estimate too low: past it, objects done every 30 s", 50, 10, time.Second, []string{
			"config 0", "compile 0/10", "compile 1/10", "compile 2/10", "compile 3/10", "compile 4/10",
			"compile 5/10", "compile 6/10", "compile 7/10", "compile 8/10", "compile 9/10", "compile 10/10",
			"compile 40", "link 50"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := &fakeClock{t: time.Unix(1000, 0)}
			p := &progressPrinter{w: &out, now: clock.now}
			feedBuild(p, clock, tc.objects, tc.total, tc.every)
			if got := printedObjects(t, out.String()); !slices.Equal(got, tc.want) {
				t.Errorf("lines at\n%q\nwant\n%q\nlog:\n%s", got, tc.want, out.String())
			}
		})
	}
}

func TestProgressLogLines(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := &progressPrinter{w: &out, now: clock.now}
	feedBuild(p, clock, 300, 300, time.Second)
	lines := strings.Split(out.String(), "\n")
	// 5 s of config, then 30 objects in 30 s: 270 left at 1 s each.
	want := "  stock compile     30/300 objects (10%)    35.0s  ETA 4m30s"
	if !slices.Contains(lines, want) {
		t.Errorf("no line %q in\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "\r") {
		t.Errorf("log has terminal control characters:\n%q", out.String())
	}
}

func TestProgressTerminal(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := &progressPrinter{w: &out, tty: true, now: clock.now}
	// 50 objects in 5 s: the line is rewritten once a second, and on each
	// of the 3 phase changes.
	feedBuild(p, clock, 50, 50, 100*time.Millisecond)
	s := out.String()
	if n := strings.Count(s, "\r\033[K"); n != 3+5 {
		t.Errorf("line written %d times, want 8:\n%q", n, s)
	}
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("want one newline, at the end (done):\n%q", s)
	}
	p.end()
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("end after done added a newline:\n%q", out.String())
	}
}

func TestProgressEndBeforeError(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := &progressPrinter{w: &out, tty: true, now: clock.now}
	p.report(kernels.Progress{Spec: "stock", Phase: kernels.PhaseCompile, Objects: 3})
	p.end()
	if s := out.String(); !strings.HasSuffix(s, "\n") {
		t.Errorf("an interrupted build leaves its line open: %q", s)
	}
	var none *progressPrinter
	none.end() // quiet: no printer
}

func TestETA(t *testing.T) {
	tests := []struct {
		name        string
		done, total int
		spent       time.Duration
		want        time.Duration
		ok          bool
	}{
		{"nothing done yet", 0, 1000, time.Minute, 0, false},
		{"a quarter in a minute", 250, 1000, time.Minute, 3 * time.Minute, true},
		{"a third in a second", 1, 3, time.Second, 2 * time.Second, true},
		{"all done", 1000, 1000, time.Minute, 0, false},
		{"more than estimated", 1200, 1000, time.Minute, 0, false},
		{"no time spent", 10, 1000, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := eta(tc.done, tc.total, tc.spent)
			if got != tc.want || ok != tc.ok {
				t.Errorf("eta(%d, %d, %v) = %v, %v; want %v, %v", tc.done, tc.total, tc.spent, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name      string
		r         kernels.Progress
		compiling time.Duration
		want      string
	}{
		{"estimate", kernels.Progress{Spec: "stock-6.1", Phase: kernels.PhaseCompile, Objects: 250, Total: 1000, Elapsed: 70 * time.Second},
			time.Minute, "  stock-6.1 compile    250/1000 objects (25%)    70.0s  ETA 3m0s"},
		{"estimate, nothing done", kernels.Progress{Spec: "stock-6.1", Phase: kernels.PhaseCompile, Total: 1000, Elapsed: 10 * time.Second},
			0, "  stock-6.1 compile      0/1000 objects (0%)    10.0s"},
		{"no estimate", kernels.Progress{Spec: "stock-6.1", Phase: kernels.PhaseCompile, Objects: 250, Elapsed: 70 * time.Second},
			time.Minute, "  stock-6.1 compile    250 objects    70.0s"},
		{"past the estimate", kernels.Progress{Spec: "stock-6.1", Phase: kernels.PhaseCompile, Objects: 1001, Total: 1000, Elapsed: 70 * time.Second},
			time.Minute, "  stock-6.1 compile   1001 objects    70.0s"},
		{"link", kernels.Progress{Spec: "stock-6.1", Phase: kernels.PhaseLink, Objects: 1000, Total: 1000, Elapsed: 300 * time.Second},
			time.Minute, "  stock-6.1 link      1000 objects   300.0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressLine(tc.r, tc.compiling); got != tc.want {
				t.Errorf("progressLine = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProgressWaitLines(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var out bytes.Buffer
		clock := &fakeClock{t: time.Unix(0, 0)}
		p := &progressPrinter{w: &out, tty: tty, now: clock.now}
		wait := "waiting for stock-6.12 being built by pid 42 since 3m12s"
		for range 2 { // the lock sends one at once, then one every 30 s: each shows
			p.report(kernels.Progress{Spec: "stock-6.12", Phase: kernels.PhaseWait, Line: wait})
			clock.t = clock.t.Add(30 * time.Second)
		}
		p.report(kernels.Progress{Spec: "stock-6.12", Phase: kernels.PhaseDone})
		if got := strings.Count(out.String(), wait); got != 2 {
			t.Errorf("tty %v: %d wait lines in %q, want 2", tty, got, out.String())
		}
		if !strings.HasSuffix(out.String(), "\n") {
			t.Errorf("tty %v: output %q does not end its line", tty, out.String())
		}
	}
}
