package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"napilab/results"
	"napilab/results/splat"
)

// consoleLimits bound what the console keeps of an untrusted guest's output:
// a flood costs the host at most about head+tail+pin bytes of memory and
// file+tail+pin bytes of console.log, whatever the guest prints.
type consoleLimits struct {
	line int // bytes kept of one line; the rest of it is dropped
	head int // memory for the first lines (the boot)
	tail int // memory for the last lines, a ring
	pin  int // memory for splat reports that left the ring
	file int // bytes of console.log written as lines arrive
}

// defaultConsoleLimits: printk lines are under 1 KiB and a debug kernel's
// whole boot about 40 KiB, so a normal run is kept whole, in memory and on
// disk; a flood keeps 1 MiB of head, 4 MiB of tail and 1 MiB of splats in
// memory, and writes at most 8+4+1 MiB (plus markers) to console.log.
var defaultConsoleLimits = consoleLimits{line: 4 << 10, head: 1 << 20, tail: 4 << 20, pin: 1 << 20, file: 8 << 20}

// lineCost is what a kept line costs in memory beyond its text: its
// consoleLine (72 bytes) and the slack of the slice and the allocator.
const lineCost = 96

// console collects the serial console: every line with the host time it
// arrived, within consoleLimits. Lines keep their number in the whole
// console, so lineTime, count and waitFor work across what was dropped.
// console.log gets the first lines as they arrive, then, when the console
// ends, a marker for what was dropped and the kept tail: a host killed
// mid-run leaves the head on disk.
type console struct {
	mu  sync.Mutex
	w   io.Writer
	lim consoleLimits

	n    int   // lines seen
	off  int64 // bytes seen
	head []consoleLine
	tl   []consoleLine // the ring, oldest first
	pins []consoleLine // splat report lines evicted from the ring
	mem  struct{ head, tail, pin int }

	pinTo int // lines up to this number belong to a splat report

	written int         // bytes written to w
	last    consoleLine // the last line written to w
	full    bool        // w got all it may get before the end

	cut       int64 // lines cut at lim.line
	drops     int64 // lines neither kept in memory nor written
	dropBytes int64
	dropFirst int
	dropLast  int
	ended     bool
}

type consoleLine struct {
	n      int
	off    int64 // where it starts in the stream
	size   int64 // its bytes in the stream, newline included
	pinned bool
	at     time.Time
	text   string
}

func newConsole(w io.Writer) *console { return &console{w: w, lim: defaultConsoleLimits} }

// copy reads r to its end, then writes the kept tail to the log.
func (c *console) copy(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	var size int64
	for {
		frag, err := br.ReadSlice('\n')
		size += int64(len(frag))
		if room := c.lim.line - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if size > 0 {
			c.add(line, size)
		}
		line, size = line[:0], 0
		if err != nil {
			c.end()
			return
		}
	}
}

func (c *console) add(raw []byte, size int64) {
	l := consoleLine{off: c.off, size: size, at: time.Now(), text: strings.TrimRight(string(raw), "\r\n")}
	if size > int64(len(raw)) {
		l.text += fmt.Sprintf(" [napilab: line cut, %d bytes dropped]", size-int64(len(raw)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.off += size
	l.n = c.n
	if size > int64(len(raw)) {
		c.cut++
	}
	if splat.Starts(l.text) {
		c.pinTo = l.n + splat.ReportLines - 1
	}
	l.pinned = l.n <= c.pinTo
	if !c.full && c.written+len(l.text)+1 <= c.lim.file {
		c.w.Write([]byte(l.text + "\n"))
		c.written += len(l.text) + 1
		c.last = l
	} else {
		c.full = true
	}
	cost := len(l.text) + lineCost
	if len(c.tl) == 0 && c.mem.head+cost <= c.lim.head {
		c.head = append(c.head, l)
		c.mem.head += cost
		return
	}
	c.tl = append(c.tl, l)
	c.mem.tail += cost
	for c.mem.tail > c.lim.tail {
		c.evict()
	}
}

// evict moves the ring's oldest line to the pins or drops it.
func (c *console) evict() {
	l := c.tl[0]
	c.tl[0] = consoleLine{}
	c.tl = c.tl[1:]
	cost := len(l.text) + lineCost
	c.mem.tail -= cost
	if l.pinned && c.mem.pin+cost <= c.lim.pin {
		c.pins = append(c.pins, l)
		c.mem.pin += cost
		return
	}
	if l.n <= c.last.n {
		return // console.log has it
	}
	c.drops++
	c.dropBytes += l.size
	if c.dropFirst == 0 {
		c.dropFirst = l.n
	}
	c.dropLast = l.n
}

// end writes what console.log lacks of the kept lines, a marker in each gap.
func (c *console) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	prev := c.last
	var b strings.Builder
	for _, l := range c.kept() {
		if l.n <= prev.n {
			continue
		}
		if l.n != prev.n+1 {
			fmt.Fprintf(&b, "--- napilab: console lines %d-%d (%d bytes) not kept: over the console bounds ---\n",
				prev.n+1, l.n-1, l.off-(prev.off+prev.size))
		}
		b.WriteString(l.text + "\n")
		prev = l
	}
	if prev.n < c.n {
		fmt.Fprintf(&b, "--- napilab: console lines %d-%d (%d bytes) not kept: over the console bounds ---\n",
			prev.n+1, c.n, c.off-(prev.off+prev.size))
	}
	c.w.Write([]byte(b.String()))
}

// kept returns the lines in memory, in order; callers hold mu.
func (c *console) kept() []consoleLine {
	all := make([]consoleLine, 0, len(c.head)+len(c.pins)+len(c.tl))
	all = append(append(append(all, c.head...), c.pins...), c.tl...)
	return all
}

// lines returns the kept lines for the splat search.
func (c *console) lines() []splat.Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []splat.Line
	for _, l := range c.kept() {
		out = append(out, splat.Line{N: l.n, Text: l.text})
	}
	return out
}

// text returns the kept lines.
func (c *console) text() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, l := range c.kept() {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// lineTime returns when console line n (1-based) arrived, zero if it was
// not kept.
func (c *console) lineTime(n int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, part := range [][]consoleLine{c.head, c.pins, c.tl} {
		i := sort.Search(len(part), func(i int) bool { return part[i].n >= n })
		if i < len(part) && part[i].n == n {
			return part[i].at
		}
	}
	return time.Time{}
}

// tail returns the last n kept lines.
func (c *console) tail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := c.kept()
	var parts []string
	for _, l := range all[max(0, len(all)-n):] {
		parts = append(parts, l.text)
	}
	return strings.Join(parts, "\n")
}

// waitFor waits until a kept console line after the first from contains s,
// or ctx ends.
func (c *console) waitFor(ctx context.Context, s string, from int) bool {
	for {
		c.mu.Lock()
		found := false
		for _, part := range [][]consoleLine{c.head, c.pins, c.tl} {
			for i := range part {
				if l := &part[i]; l.n > from {
					found = found || strings.Contains(l.text, s)
					from = l.n
				}
			}
		}
		c.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// count returns how many lines the console has had.
func (c *console) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// dropped says what the console did not keep, nil if it kept everything.
func (c *console) dropped() *results.Dropped {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops == 0 && c.cut == 0 {
		return nil
	}
	d := &results.Dropped{ConsoleLines: c.drops, ConsoleBytes: c.dropBytes, LongLines: c.cut}
	if c.drops > 0 {
		d.ConsoleWhere = fmt.Sprintf("lines %d-%d", c.dropFirst, c.dropLast)
	}
	return d
}

// dropped sums what the run did not keep of the guest's output: console
// lines and control lines; a flood alone is no verdict, so it is logged and
// recorded, nil when nothing was dropped.
func (r *run) dropped() *results.Dropped {
	var d results.Dropped
	if r.guest != nil {
		if cd := r.guest.output().dropped(); cd != nil {
			d = *cd
		}
	}
	if r.ctl != nil {
		cd := r.ctl.dropped()
		d.ControlLong, d.Garbage = cd.Long, cd.Garbage
	}
	if d == (results.Dropped{}) {
		return nil
	}
	r.cfg.Logf("%s", d)
	return &d
}
