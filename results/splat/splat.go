package splat

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"napilab/results"
)

// Report length bounds: splatMaxLines for most reports, splatLongLines for
// KASAN and lockdep reports, which are longer but have a reliable end.
const (
	splatMaxLines  = 60
	splatLongLines = 150
)

// splatSource is a place in a report to look for the guilty function.
type splatSource int

const (
	splatHeader    splatSource = iota // the "frame" group of the first line
	splatRIP                          // the first "RIP: 0010:func+0x.." line
	splatTrace                        // the first non-generic frame after "Call Trace:"
	splatTraceTask                    // the same, skipping <IRQ> sections (RCU stall dumps)
	splatLockAt                       // the first lockdep "..., at: func+0x.." line
)

// splatPattern recognises the first line of a report.
type splatPattern struct {
	typ   results.CrashType
	re    *regexp.Regexp
	title string              // "$msg" is replaced by msg(the "msg" group)
	msg   func(string) string // normalises the "msg" group; nil keeps it
	from  []splatSource       // where to look for the guilty function, in order
	lines int                 // report length bound; splatMaxLines if 0
	// endTask ends the report at the "</TASK>" closing its call trace, for
	// reports printed with dump_stack() that have no end marker.
	endTask bool
}

var (
	splatFromWarn  = []splatSource{splatHeader, splatRIP, splatTrace}
	splatFromFault = []splatSource{splatRIP, splatTrace}
	splatFromLock  = []splatSource{splatLockAt, splatTrace}
)

// splatPatterns is tried in order; the first match wins.
var splatPatterns = []splatPattern{
	// WARNINGs a checker prints from its own function, titled after the
	// caller like syzkaller does: refcount_t saturation, DEBUG_LIST, ODEBUG.
	{typ: results.CrashWarning, title: "WARNING: refcount bug", from: []splatSource{splatTrace},
		re: splatRe(`^WARNING: (?:CPU: \d+ PID: \d+ at \S+:\d+ |\S+:\d+ at )refcount_warn_saturate\+0x`)},
	{typ: results.CrashBug, title: "BUG: corrupted list", from: []splatSource{splatTrace},
		re: splatRe(`^WARNING: (?:CPU: \d+ PID: \d+ at \S+:\d+ |\S+:\d+ at )__list_\w+_valid\w*\+0x`)},
	{typ: results.CrashWarning, title: "WARNING: ODEBUG bug", from: []splatSource{splatTrace},
		re: splatRe(`^WARNING: (?:CPU: \d+ PID: \d+ at \S+:\d+ |\S+:\d+ at )debug_print_object\+0x`)},
	{typ: results.CrashWarning, title: "WARNING", from: splatFromWarn,
		re: splatRe(`^WARNING: CPU: \d+ PID: \d+ at (?:\S+:\d+ )?(?:(?P<frame>[A-Za-z_][\w.]*)\+0x)?`)},
	{typ: results.CrashWarning, title: "WARNING", from: splatFromWarn, // 6.16+ layout
		re: splatRe(`^WARNING: \S+:\d+ at (?P<frame>[A-Za-z_][\w.]*)\+0x\S*, CPU#\d+`)},
	{typ: results.CrashLockdep, title: "possible deadlock", from: splatFromLock, lines: splatLongLines, endTask: true,
		re: splatRe(`^WARNING: possible (?:circular locking dependency|recursive locking|irq lock inversion dependency) detected`)},
	{typ: results.CrashLockdep, title: "inconsistent lock state", from: splatFromLock, lines: splatLongLines, endTask: true,
		re: splatRe(`^WARNING: inconsistent lock state`)},
	{typ: results.CrashLockdep, title: "$msg", from: []splatSource{splatTrace}, lines: splatLongLines, endTask: true,
		re: splatRe(`^WARNING: (?P<msg>suspicious RCU usage|bad unlock balance|held lock freed|lock held when returning to user space|nested lock was not taken)`)},
	{typ: results.CrashLockdep, title: "INFO: trying to register non-static key", from: []splatSource{splatTrace}, endTask: true,
		re: splatRe(`^INFO: trying to register non-static key`)},
	{typ: results.CrashKASAN, title: "KASAN: $msg", from: []splatSource{splatHeader, splatTrace}, lines: splatLongLines,
		re: splatRe(`^BUG: KASAN: (?P<msg>[\w-]+(?: or [\w-]+)?) in (?P<frame>[A-Za-z_][\w.]*)`)},
	{typ: results.CrashUBSAN, title: "UBSAN: $msg", from: []splatSource{splatTrace}, lines: splatLongLines, endTask: true,
		re: splatRe(`^UBSAN: (?P<msg>[\w-]+) in `)},
	{typ: results.CrashSoftLockup, title: "BUG: soft lockup", from: splatFromFault, endTask: true,
		re: splatRe(`^(?:(?:NMI )?watchdog: )?BUG: soft lockup - CPU#\d+ stuck for \d+s!`)},
	{typ: results.CrashHardLockup, title: "BUG: hard lockup", from: splatFromFault, endTask: true,
		re: splatRe(`^(?:NMI )?watchdog: Watchdog detected hard LOCKUP on cpu \d+`)},
	{typ: results.CrashHungTask, title: "INFO: task hung", from: []splatSource{splatTrace}, endTask: true,
		re: splatRe(`^INFO: task .+:\d+ blocked for more than \d+ seconds`)},
	{typ: results.CrashRCUStall, title: "INFO: rcu detected stall", from: []splatSource{splatRIP, splatTraceTask},
		re: splatRe(`^(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stall`)},
	{typ: results.CrashGPF, title: "general protection fault", from: splatFromFault,
		re: splatRe(`^(?:Oops: )?general protection fault`)},
	{typ: results.CrashBug, title: "kernel BUG", from: splatFromFault,
		re: splatRe(`^kernel BUG at \S+:\d+!`)},
	{typ: results.CrashBug, title: "BUG: $msg", msg: splatShortMsg, from: splatFromFault, endTask: true,
		re: splatRe(`^BUG: (?P<msg>.+)`)},
	{typ: results.CrashPanic, title: "kernel panic: $msg", msg: splatNormalize,
		re: splatRe(`^Kernel panic - not syncing: (?P<msg>.*)`)},
	{typ: results.CrashUnregisterNetdev, title: "unregister_netdevice: waiting for DEV to become free", lines: 1,
		re: splatRe(`^unregister_netdevice: waiting for (?P<dev>\S+) to become free`)},
	{typ: results.CrashOops, title: "Oops", from: splatFromFault,
		re: splatRe(`^(?:Internal error: )?Oops(?: - \w+)?: .*\[#\d+\]`)},
}

// splatGeneric matches functions that report, wait, lock or dispatch and so
// never explain a bug by themselves.
var splatGeneric = splatRe(`^(?:` + strings.Join([]string{
	`__dump_stack`, `dump_stack\w*`, `show_stack\w*`, `show_regs`, `show_trace_log_lvl`, `panic`,
	`__warn\w*`, `warn_slowpath\w*`, `report_bug`, `handle_bug`, `do_error_trap`, `do_trap\w*`,
	`exc_\w+`, `asm_\w+`, `__die\w*`, `die\w*`, `oops_\w+`, `nmi_\w+`, `__schedule_bug`,
	`__schedule\w*`, `schedule\w*`, `preempt_schedule\w*`, `_?_?cond_resched`, `io_schedule\w*`,
	`usleep_range\w*`, `msleep\w*`, `ssleep`, `\w*wait_for_common\w*`, `wait_for_completion\w*`,
	`kthread\w*`, `ret_from_fork\w*`, `worker_thread`, `process_one_work`, `process_scheduled_works`,
	`smpboot_thread_fn`, `__might_sleep`, `__might_resched`, `_?_?might_fault`,
	`_?_?lock_acquire\w*`, `lock_release`, `lockdep_\w+`, `_raw_\w+`, `do_raw_\w+`,
	`\w*queued_spin_lock_slowpath`, `_?_?mutex_lock\w*`, `mutex_unlock`, `down_read\w*`,
	`down_write\w*`, `rwsem_down_\w+`, `up_read`, `up_write`, `refcount_\w+`, `__refcount_\w+`,
	`do_syscall_\d+`, `entry_SYSCALL\w*`, `syscall_exit\w*`, `kasan_\w+`, `__kasan_\w+`,
	`__asan_\w+`, `print_report`, `print_address_description\w*`, `_?_?mem(?:cpy|move|set)`,
	`rcu_dump_cpu_stacks`, `print_cpu_stall\w*`, `check_cpu_stall`, `rcu_sched_clock_irq`,
	`update_process_times`, `tick_\w+`, `_?_?hrtimer_\w+`, `_?_?sysvec_\w+`, `_?_?irq_exit\w*`,
	`_?_?do_softirq\w*`, `handle_softirqs`, `watchdog_timer_fn`, `trace_hardirqs_\w+`,
	`__ubsan_handle_\w+`, `ubsan_\w+`, `__list_\w+_valid\w*`, `debug_print_object`, `_?_?debug_object_\w+`,
	`debug_check_no_obj_freed`, `kfree`, `kvfree`, `kmem_cache_free`, `slab_free\w*`, `__slab_free`,
	`free_debug_processing`, `__free_object`,
}, "|") + `)$`)

var (
	splatPrefixRe = splatRe(`\[\s*(\d+\.\d{6})\](?:\s?\[\s*[TC]\d+\])? ?`)
	splatRIPRe    = splatRe(`RIP: [0-9a-f]{4}:(?:\[<[0-9a-f]+>\]\s+(?:\[<[0-9a-f]+>\]\s+)?)?([A-Za-z_][\w.]*)\+0x`)
	splatFrameRe  = splatRe(`^\s*([A-Za-z_][\w.]*)(?:\+0x[0-9a-f]+/0x[0-9a-f]+|\s+\S+:\d+\s+\[inline\])`)
	splatAtRe     = splatRe(`, at: ([A-Za-z_][\w.]*)\+0x`)
	splatAccessRe = splatRe(`^(Read|Write) of size`)
	splatOffsetRe = splatRe(`\+0x[0-9a-f]+(?:/0x[0-9a-f]+)?`)
	splatCPURe    = splatRe(`(?i)\bcpu#? ?\d+`)
	splatHexRe    = splatRe(`(?i)0x[0-9a-f]+|^[0-9a-f]{8,}$`)
	splatRuleRe   = splatRe(`^={20,}$`)
)

func splatRe(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// splatLine is one console line split into its printk prefix and message.
type splatLine struct {
	n       int     // the 1-based console line number
	raw     string  // the line without CR
	text    string  // the kernel message after the printk prefix
	time    float64 // the printk timestamp, -1 if none
	hasTime bool
}

// Find returns every splat in a console log, in order.
// When the log carries printk timestamps, lines without one are taken for
// other programs' output and ignored. A repeated "unregister_netdevice:
// waiting" message for the same device is reported once.
func Find(console []byte) []results.Splat {
	var lines []Line
	for i, raw := range strings.Split(string(console), "\n") {
		lines = append(lines, Line{N: i + 1, Text: raw})
	}
	return FindLines(lines)
}

// Line is one console line with its 1-based number in the whole
// console (lines kept from a longer console have gaps between them).
type Line struct {
	N    int
	Text string
}

// FindLines is Find over the lines kept of a console, in order;
// a report stops at a gap in the numbering.
func FindLines(kept []Line) []results.Splat {
	lines := splatSplit(kept)
	kernelOnly := slices.ContainsFunc(lines, func(l splatLine) bool { return l.hasTime })
	var (
		splats []results.Splat
		cur    *splatOpen
		devs   = map[string]bool{}
	)
	flush := func() {
		if cur != nil {
			splats = append(splats, cur.finish())
			cur = nil
		}
	}
	for i, l := range lines {
		if i > 0 && l.n != lines[i-1].n+1 {
			flush()
		}
		if kernelOnly && !l.hasTime {
			continue
		}
		p, m := splatMatch(l.text)
		if p != nil && p.typ == results.CrashUnregisterNetdev {
			if devs[m["dev"]] {
				p = nil
			}
			devs[m["dev"]] = true
		}
		switch {
		case p != nil && cur.absorbs(p):
			cur.oops = true
		case p != nil:
			flush()
			cur = &splatOpen{p: p, m: m, line: l.n}
		case cur == nil:
			continue
		}
		cur.lines = append(cur.lines, l)
		if cur.ends(l.text) {
			flush()
		}
	}
	flush()
	return splats
}

// Allowed reports whether title matches one of the allow patterns.
func Allowed(title string, allow []*regexp.Regexp) bool {
	for _, re := range allow {
		if re.MatchString(title) {
			return true
		}
	}
	return false
}

func splatSplit(kept []Line) []splatLine {
	lines := make([]splatLine, 0, len(kept))
	for _, k := range kept {
		lines = append(lines, splatParse(k.N, k.Text))
	}
	return lines
}

func splatParse(n int, raw string) splatLine {
	l := splatLine{n: n, raw: strings.Trim(raw, "\r"), time: -1}
	l.text = l.raw
	if m := splatPrefixRe.FindStringSubmatchIndex(l.raw); m != nil {
		l.time, _ = strconv.ParseFloat(l.raw[m[2]:m[3]], 64)
		l.hasTime = true
		l.text = l.raw[m[1]:]
	}
	return l
}

// splatHint holds words one of splatPatterns' first lines contains: a
// cheap test before the patterns, for consoles read as they stream.
var splatHint = []string{"WARNING", "BUG", "INFO", "LOCKUP", "stall", "fault", "Oops", "panic", "unregister_netdevice", "UBSAN"}

// Starts reports whether a console line starts a kernel report; a
// console reader keeps such a line and the ReportLines after it.
func Starts(line string) bool {
	if !slices.ContainsFunc(splatHint, func(h string) bool { return strings.Contains(line, h) }) {
		return false
	}
	p, _ := splatMatch(splatParse(0, line).text)
	return p != nil
}

// ReportLines is the most lines a report spans, its first included.
const ReportLines = splatLongLines

func splatMatch(text string) (*splatPattern, map[string]string) {
	for i := range splatPatterns {
		p := &splatPatterns[i]
		sub := p.re.FindStringSubmatch(text)
		if sub == nil {
			continue
		}
		m := map[string]string{}
		for j, name := range p.re.SubexpNames() {
			if name != "" {
				m[name] = sub[j]
			}
		}
		return p, m
	}
	return nil, nil
}

// splatOpen is a report still being collected.
type splatOpen struct {
	p     *splatPattern
	m     map[string]string
	line  int
	lines []splatLine
	oops  bool // an "Oops:" joined the report, so it ends with "---[ end trace"
}

// absorbs reports whether the start of p belongs to the open report, like
// the "Oops:" line that follows "BUG: kernel NULL pointer dereference".
func (o *splatOpen) absorbs(p *splatPattern) bool {
	if o == nil || p.typ != results.CrashOops || len(o.lines) > 10 {
		return false
	}
	return o.p.typ == results.CrashBug || o.p.typ == results.CrashKASAN || o.p.typ == results.CrashGPF
}

func (o *splatOpen) ends(text string) bool {
	return len(o.lines) >= cmp.Or(o.p.lines, splatMaxLines) || strings.HasPrefix(text, "---[ end ") ||
		o.p.endTask && !o.oops && strings.TrimSpace(text) == "</TASK>" ||
		o.p.typ == results.CrashKASAN && len(o.lines) > 1 && splatRuleRe.MatchString(text)
}

func (o *splatOpen) finish() results.Splat {
	texts := make([]string, len(o.lines))
	raws := make([]string, len(o.lines))
	for i, l := range o.lines {
		texts[i], raws[i] = l.text, l.raw
	}
	msg := o.m["msg"]
	if o.p.msg != nil {
		msg = o.p.msg(msg)
	}
	title := strings.TrimRight(strings.Replace(o.p.title, "$msg", msg, 1), ": ")
	if access := splatFirst(texts[1:min(len(texts), 4)], splatAccessRe); o.p.typ == results.CrashKASAN && access != "" {
		title += " " + access // KASAN: "Read of size 8 at addr ..."
	}
	frame := o.frame(texts)
	if frame != "" {
		title += " in " + frame
	}
	return results.Splat{
		Type:   o.p.typ,
		Title:  title,
		Line:   o.line,
		Time:   o.lines[0].time,
		Report: strings.Join(raws, "\n") + "\n",
		Frame:  frame,
	}
}

func (o *splatOpen) frame(texts []string) string {
	for _, src := range o.p.from {
		fn := ""
		switch src {
		case splatHeader:
			fn = o.m["frame"]
		case splatRIP:
			fn = splatFirst(texts, splatRIPRe)
		case splatLockAt:
			fn = splatFirst(texts, splatAtRe)
		case splatTrace, splatTraceTask:
			fn = splatTraceFrame(texts, src == splatTraceTask)
		}
		if fn = splatClean(fn); fn != "" && !splatGeneric.MatchString(fn) {
			return fn
		}
	}
	return ""
}

func splatFirst(texts []string, re *regexp.Regexp) string {
	for _, t := range texts {
		if m := re.FindStringSubmatch(t); m != nil {
			return m[1]
		}
	}
	return ""
}

// splatTraceFrame returns the first non-generic function of the first call trace.
func splatTraceFrame(texts []string, skipIRQ bool) string {
	inTrace, inIRQ := false, false
	for _, t := range texts {
		switch strings.TrimSpace(t) {
		case "Call Trace:", "Call trace:":
			inTrace = true
			continue
		case "<IRQ>":
			inIRQ = true
		case "</IRQ>":
			inIRQ = false
		}
		if !inTrace || skipIRQ && inIRQ {
			continue
		}
		if m := splatFrameRe.FindStringSubmatch(t); m != nil {
			if fn := splatClean(m[1]); !splatGeneric.MatchString(fn) {
				return fn
			}
		}
	}
	return ""
}

// splatClean drops compiler clone suffixes such as .isra.0, .constprop.0 and .cold.
func splatClean(fn string) string {
	if i := strings.IndexByte(fn, '.'); i >= 0 {
		return fn[:i]
	}
	return fn
}

// splatShortMsg keeps the words of a "BUG: " message before its first
// variable part: "scheduling while atomic: swapper/0/0/0x00000002" becomes
// "scheduling while atomic".
func splatShortMsg(s string) string {
	var words []string
	for _, w := range strings.Fields(s) {
		cut := strings.IndexAny(w, ":,!(;[")
		if cut == 0 || strings.Contains(" - at in on for ", " "+w+" ") || strings.ContainsAny(w, "0123456789") {
			break
		}
		if cut > 0 {
			words = append(words, w[:cut])
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// splatNormalize strips offsets, addresses and CPU numbers from a message.
func splatNormalize(s string) string {
	s = splatCPURe.ReplaceAllString(splatOffsetRe.ReplaceAllString(s, ""), "CPU")
	var words []string
	for _, w := range strings.Fields(s) {
		if !splatHexRe.MatchString(w) {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

// StackFrame returns the first non-generic function of a kernel stack such
// as /proc/PID/stack ("[<0>] napi_disable+0x3a/0x70"): where a task is stuck.
func StackFrame(stack string) string {
	for _, t := range strings.Split(stack, "\n") {
		if _, rest, ok := strings.Cut(t, ">] "); ok {
			t = rest
		}
		if m := splatFrameRe.FindStringSubmatch(t); m != nil {
			if fn := splatClean(m[1]); !splatGeneric.MatchString(fn) {
				return fn
			}
		}
	}
	return ""
}
