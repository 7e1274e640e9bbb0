package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"napilab/kernels"
)

const (
	// logEvery is the longest a log goes without a progress line while a
	// build reports.
	logEvery = 30 * time.Second
	// logSteps is how many lines a log gets for the estimated objects: one
	// per tenth.
	logSteps = 10
	// ttyEvery is how often a terminal's progress line is rewritten.
	ttyEvery = time.Second
)

// progressPrinter prints a kernel build's progress reports. On a terminal
// it keeps one line, rewritten at most once a second. Elsewhere (a log, a
// pipe) it prints a line on each phase change and then after a tenth of
// the estimated objects or 30 s, whichever comes first.
type progressPrinter struct {
	w   io.Writer
	tty bool
	now func() time.Time
	// spec and phase are the last report's.
	spec, phase string
	// at and objects are the last printed line's.
	at      time.Time
	objects int
	// compileStart is when the current build's compile phase began.
	compileStart time.Time
	// open is set while a terminal line waits for its newline.
	open bool
}

// progressWriter returns the printer of a build's progress to w, or nil
// when quiet.
func progressWriter(w io.Writer, quiet bool) *progressPrinter {
	if quiet {
		return nil
	}
	return &progressPrinter{w: w, tty: isTerminal(w), now: time.Now}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// report takes one progress report (kernels.Options.Progress).
func (p *progressPrinter) report(r kernels.Progress) {
	now := p.now()
	changed := r.Spec != p.spec || r.Phase != p.phase
	if changed && r.Phase == kernels.PhaseCompile {
		p.compileStart = now
	}
	if r.Phase == kernels.PhaseDone {
		p.spec, p.phase = r.Spec, r.Phase
		p.end()
		return
	}
	if r.Phase == kernels.PhaseWait { // the lock reports once, then every 30 s: each shows
		p.spec, p.phase, p.at = r.Spec, r.Phase, now
		p.print("  " + r.Line)
		return
	}
	if !changed && !p.due(r, now) {
		return
	}
	p.spec, p.phase, p.at, p.objects = r.Spec, r.Phase, now, r.Objects
	p.print(progressLine(r, now.Sub(p.compileStart)))
}

// print shows one line: on a terminal in place of the last.
func (p *progressPrinter) print(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.open = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// due reports whether a report in the same phase as the last line gets a
// line of its own.
func (p *progressPrinter) due(r kernels.Progress, now time.Time) bool {
	since := now.Sub(p.at)
	switch {
	case p.tty:
		return since >= ttyEvery
	case since >= logEvery:
		return true
	}
	if r.Total <= 0 || r.Objects > r.Total {
		return false // no estimate, or a wrong one: 30 s it is
	}
	return r.Objects-p.objects >= max(1, r.Total/logSteps)
}

// end finishes a terminal's line, before other output follows it. A nil
// printer does nothing.
func (p *progressPrinter) end() {
	if p != nil && p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// progressLine is one report as text, named by its spec (in a stream,
// runs' lines come between a build's); compiling is the time spent in the
// compile phase so far, for the ETA.
func progressLine(r kernels.Progress, compiling time.Duration) string {
	counted := r.Phase == kernels.PhaseCompile && r.Total > 0 && r.Objects <= r.Total
	if !counted {
		return fmt.Sprintf("  %s %-8s %5d objects  %6.1fs", r.Spec, r.Phase, r.Objects, r.Elapsed.Seconds())
	}
	s := fmt.Sprintf("  %s %-8s %5d/%d objects (%d%%)  %6.1fs", r.Spec, r.Phase, r.Objects, r.Total, 100*r.Objects/r.Total, r.Elapsed.Seconds())
	if left, ok := eta(r.Objects, r.Total, compiling); ok {
		s += "  ETA " + left.Round(time.Second).String()
	}
	return s
}

// eta estimates the time left to compile total objects when done of them
// took spent, at the rate so far; false when there is no rate yet or
// nothing left.
func eta(done, total int, spent time.Duration) (time.Duration, bool) {
	if done <= 0 || done >= total || spent <= 0 {
		return 0, false
	}
	return time.Duration(float64(spent) * float64(total-done) / float64(done)), true
}
