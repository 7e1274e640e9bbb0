package metrics

import (
	"cmp"
	"fmt"
	"napilab/internal/wire"
	"slices"
	"strconv"
	"strings"
)

// Series is one parsed snapshot of a source: field name -> values, one per CPU
// for per-CPU fields, a single value otherwise. Per-CPU slices follow the
// file's own order: CPU columns of the header for softirqs and interrupts,
// lines for softnet_stat (one per online CPU; its "cpu" field has the ids).
type Series map[string][]float64

// ParseSource parses the text of an agent sample source.
// source is one of: "softirqs", "softnet_stat", "interrupts", "snmp", "netdev",
// "qdisc", "qdisc:<netns>", "napi", "napi:<netns>" or "tasks:<prefix>".
// A "#N" suffix (the agent's key for a second read of a source) is ignored.
func ParseSource(source, text string) (Series, error) {
	src := source
	if i := strings.LastIndexByte(src, '#'); i > 0 && isDigits(src[i+1:]) {
		src = src[:i]
	}
	switch {
	case src == wire.SourceSoftirqs:
		si, err := ParseSoftirqs(text)
		if err != nil {
			return nil, err
		}
		s := Series{}
		for name, vals := range si {
			s[name] = floats(vals)
		}
		return s, nil
	case src == wire.SourceSoftnet:
		return parseSoftnet(text)
	case src == wire.SourceInterrupts:
		return parseInterrupts(text)
	case src == wire.SourceSNMP:
		return parseSNMP(text)
	case src == wire.SourceNetdev:
		return parseNetdev(text)
	case src == SourceNAPIPolls:
		return parsePolls(text)
	case src == wire.SourceQdisc || strings.HasPrefix(src, wire.PrefixQdisc):
		return parseQdisc(text)
	case src == SourceNAPI || strings.HasPrefix(src, NAPIPrefix):
		return parseNAPI(text)
	case strings.HasPrefix(src, wire.PrefixTasks):
		return parseTasks(text)
	case strings.HasPrefix(src, wire.PrefixSched):
		return parseSched(text)
	}
	return nil, fmt.Errorf("unknown source %q, want softirqs, softnet_stat, interrupts, snmp, netdev, napi_polls, qdisc[:<netns>], napi[:<netns>] or tasks:<prefix>", source)
}

// Value returns a field's value on one CPU (cpu >= 0) or summed over CPUs (cpu < 0).
// A single-valued field answers for cpu 0 and for the sum.
func (s Series) Value(field string, cpu int) (float64, bool) {
	vals, ok := s[field]
	if !ok || len(vals) == 0 || cpu >= len(vals) {
		return 0, false
	}
	if cpu >= 0 {
		return vals[cpu], true
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	return sum, true
}

// userHZ is USER_HZ, the unit of utime and stime in /proc/PID/stat.
const userHZ = 100

// parseTasks parses the agent's tasks:<prefix> lines "pid comm utime stime
// processor": "<comm>" -> [utime+stime in seconds], summed over tasks sharing
// a comm, and "total" over all tasks. No lines is a valid snapshot: total 0.
func parseTasks(text string) (Series, error) {
	ticks := map[string]uint64{}
	var total uint64
	for _, l := range nonEmptyLines(text) {
		f := strings.Fields(l)
		n := len(f)
		if n < 5 {
			return nil, fmt.Errorf("bad task line %s: want \"pid comm utime stime processor\"", quote(l))
		}
		_, perr := strconv.ParseUint(f[0], 10, 32)
		ut, uerr := strconv.ParseUint(f[n-3], 10, 64)
		st, serr := strconv.ParseUint(f[n-2], 10, 64)
		_, cerr := strconv.ParseUint(f[n-1], 10, 32)
		comm := strings.Join(f[1:n-3], " ") // a comm may hold spaces
		err := cmp.Or(perr, uerr, serr, cerr)
		if err == nil && comm == "total" {
			err = fmt.Errorf("comm %q clashes with the total field", comm)
		}
		if err != nil {
			return nil, fmt.Errorf("bad task line %s: %w", quote(l), err)
		}
		ticks[comm] += ut + st
		total += ut + st
	}
	s := Series{"total": {float64(total) / userHZ}}
	for comm, t := range ticks {
		s[comm] = []float64{float64(t) / userHZ}
	}
	return s, nil
}

// taskFields are the fields of the ksoftirqd and napi families: cpu_seconds
// from the tasks source, the others from the sched source.
var taskFields = []string{"cpu_seconds", "run_us", "sleeps", "preempted"}

// parseSched parses the agent's sched:<prefix> lines "pid run_ns voluntary
// involuntary comm": run_us, sleeps and preempted summed over all tasks,
// and <field>@<comm> summed over tasks sharing a comm. No lines is a valid
// snapshot: every total 0.
func parseSched(text string) (Series, error) {
	s := Series{"run_us": {0}, "sleeps": {0}, "preempted": {0}}
	for _, l := range nonEmptyLines(text) {
		f := strings.Fields(l)
		if len(f) < 5 {
			return nil, fmt.Errorf("bad sched line %s: want \"pid run_ns voluntary involuntary comm\"", quote(l))
		}
		var v [4]uint64
		for i := range v {
			var err error
			if v[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
				return nil, fmt.Errorf("bad sched line %s: %w", quote(l), err)
			}
		}
		comm := strings.Join(f[4:], " ")
		for i, field := range []string{"run_us", "sleeps", "preempted"} {
			x := float64(v[i+1])
			if field == "run_us" {
				x /= 1000
			}
			s[field][0] += x
			key := field + "@" + comm
			if s[key] == nil {
				s[key] = []float64{0}
			}
			s[key][0] += x
		}
	}
	return s, nil
}

// Ref is a parsed metric name: the sample source to request and the
// Series field to read.
type Ref struct {
	Name   string // the metric as written, e.g. "softnet.received_rps.cpu1"
	Source string // the agent sample source to request, e.g. "softnet_stat"
	Field  string // the Series field to read, e.g. "received_rps", "ksoftirqd/1", "total"
	CPU    int    // the CPU of a ".cpuN" suffix; -1 sums over CPUs
	// Dev is the device the metric reads ("" for none), in Netns ("" the
	// root), or in whichever namespace holds a device of that name when
	// AnyNetns (who polled sees every namespace; "any" sums every device).
	// NAPI is its rx-<queue>, backlog or any, when it names one.
	Dev, Netns, NAPI string
	AnyNetns         bool
}

// family is a metric source as Parse checks it.
type family struct {
	source string   // agent sample source
	fields []string // the fixed field names; nil when open-ended
	perCPU bool     // whether ".cpuN" is allowed
}

var (
	softirqNames  = []string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}
	softnetFields = []string{"processed", "dropped", "time_squeeze", "received_rps", "flow_limit_count",
		"backlog_len", "input_qlen", "process_qlen"}
	familyNames = []string{"softirqs", "softnet", "interrupts", "snmp", "netdev", "qdisc", "ksoftirqd", "napi"}
	families    = map[string]family{
		"softirqs":   {wire.SourceSoftirqs, softirqNames, true},
		"softnet":    {wire.SourceSoftnet, softnetFields, true},
		"interrupts": {wire.SourceInterrupts, nil, true},
		"snmp":       {wire.SourceSNMP, nil, false},
		"netdev":     {wire.SourceNetdev, nil, false},
		"ksoftirqd":  {wire.PrefixTasks + "ksoftirqd/", taskFields, true},
		"napi":       {wire.PrefixTasks + "napi/", taskFields, false},
	}
)

// Parse parses a metric name, "<source>.<field>[.cpuN]" (see Known). It checks the
// source and, where they are fixed (softirqs, softnet, ksoftirqd, napi, qdisc
// counters), the field; interrupts and snmp fields are only checked for shape.
func Parse(name string) (Ref, error) {
	src, rest, _ := strings.Cut(name, ".")
	if src == "qdisc" {
		return parseQdiscMetric(name, rest)
	}
	if src == "napi" {
		if what, r, _ := strings.Cut(rest, "."); what == "polls" || what == "packets" {
			return parsePollMetric(name, what, r)
		}
		if napiMetric(rest) {
			return parseNAPIMetric(name, rest)
		}
	}
	fam, ok := families[src]
	if !ok {
		return Ref{}, fmt.Errorf("unknown metric source %q in %q, want one of %s", src, name, strings.Join(familyNames, ", "))
	}
	m := Ref{Name: name, Source: fam.source, Field: rest, CPU: -1}
	head, last := "", rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		head, last = rest[:i], rest[i+1:]
	}
	if n, ok := strings.CutPrefix(last, "cpu"); ok && isDigits(n) {
		cpu, err := strconv.Atoi(n)
		if err != nil || cpu >= maxCPUs {
			return Ref{}, fmt.Errorf("bad cpu in metric %q, want cpu0 to cpu%d", name, maxCPUs-1)
		}
		m.Field, m.CPU = head, cpu
	}
	switch {
	case m.CPU >= 0 && !fam.perCPU:
		return Ref{}, fmt.Errorf("metric %q: %s is not per CPU, drop .cpu%d", name, src, m.CPU)
	case fam.fields != nil && !slices.Contains(fam.fields, m.Field):
		return Ref{}, fmt.Errorf("unknown %s field %q in metric %q, want one of %s", src, m.Field, name, strings.Join(fam.fields, ", "))
	case src == "snmp" && (strings.Count(m.Field, ".") != 1 || strings.HasPrefix(m.Field, ".") || strings.HasSuffix(m.Field, ".")):
		return Ref{}, fmt.Errorf("bad snmp field %q in metric %q, want <Group>.<Name> such as Udp.RcvbufErrors", m.Field, name)
	case m.Field == "" || strings.ContainsAny(m.Field, " \t\r\n"):
		return Ref{}, fmt.Errorf("bad field %q in metric %q, want %s.<field>[.cpuN]", m.Field, name, src)
	}
	if src == "snmp" {
		if err := checkSNMP(name, m.Field); err != nil {
			return Ref{}, err
		}
	}
	if src == "netdev" {
		if err := checkNetdev(name, m.Field); err != nil {
			return Ref{}, err
		}
		m.Dev = m.Field[:strings.LastIndexByte(m.Field, '.')]
	}
	if comm, ok := strings.CutPrefix(fam.source, wire.PrefixTasks); ok {
		field := m.Field
		m.Field = "total"
		if m.CPU >= 0 {
			m.Field = comm + strconv.Itoa(m.CPU)
		}
		if field != "cpu_seconds" { // the sched source's fields
			m.Source = wire.PrefixSched + comm
			m.Field = field
			if m.CPU >= 0 {
				m.Field = field + "@" + comm + strconv.Itoa(m.CPU)
			}
		}
	}
	return m, nil
}

// maxCPUs bounds a ".cpuN" suffix (the kernel's NR_CPUS limit).
const maxCPUs = 8192

// From reads the metric from a Series parsed from m.Source.
func (m Ref) From(s Series) (float64, bool) {
	if strings.HasPrefix(m.Source, wire.PrefixTasks) || strings.HasPrefix(m.Source, wire.PrefixSched) {
		return s.Value(m.Field, -1) // one value per task; the CPU is in Field
	}
	if v, ok := s.Value(m.Field, m.CPU); ok || m.Source != SourceNAPIPolls {
		return v, ok
	}
	return 0, true // a NAPI not polled (yet) in that context, or on that CPU
}

// Doc documents one metric family for `lab scenario` help.
type Doc struct {
	Pattern string // metric name pattern
	File    string // what the guest agent reads
	Unit    string // unit of the value
	PerCPU  bool   // whether a ".cpuN" suffix selects one CPU (without it: summed)
	Meaning string // one line
}

// Known documents every metric family Parse accepts.
var Known = []Doc{
	{"softirqs.<NAME>[.cpuN]", "/proc/softirqs", "count", true,
		"softirq runs; NAME is " + strings.Join(softirqNames, ", ")},
	{"softnet.processed[.cpuN]", "/proc/net/softnet_stat", "packets", true,
		"packets through __netif_receive_skb_core on the CPU"},
	{"softnet.dropped[.cpuN]", "/proc/net/softnet_stat", "packets", true,
		"packets enqueue_to_backlog dropped: backlog over netdev_max_backlog, or flow limit"},
	{"softnet.time_squeeze[.cpuN]", "/proc/net/softnet_stat", "count", true,
		"net_rx_action runs that stopped on budget or time with work left"},
	{"softnet.received_rps[.cpuN]", "/proc/net/softnet_stat", "count", true,
		"RPS IPIs the CPU received (rps_trigger_softirq)"},
	{"softnet.flow_limit_count[.cpuN]", "/proc/net/softnet_stat", "packets", true,
		"packets the RPS flow limit picked for dropping (also in dropped)"},
	{"softnet.backlog_len[.cpuN]", "/proc/net/softnet_stat", "packets (gauge)", true,
		"packets waiting in the CPU's input and process queues when sampled (13+ column kernels)"},
	{"softnet.input_qlen[.cpuN]", "/proc/net/softnet_stat", "packets (gauge)", true,
		"packets waiting in input_pkt_queue when sampled (15 column kernels: 6.4 on)"},
	{"softnet.process_qlen[.cpuN]", "/proc/net/softnet_stat", "packets (gauge)", true,
		"packets waiting in process_queue when sampled (15 column kernels: 6.4 on)"},
	{"interrupts.<ROW>[.cpuN]", "/proc/interrupts", "count", true,
		"interrupts: named rows (CAL function-call IPIs, RES, LOC, TLB, NMI, ERR) or IRQ action names (virtio2-input.0), summed over IRQs sharing a name"},
	{"netdev.<dev>.<counter>", "/proc/net/dev", "count", false,
		"per-device counters of the root namespace: rx_packets, rx_bytes, rx_drop, rx_errs, tx_packets, tx_drop, ... (netdev.eth0.rx_packets)"},
	{"qdisc.<dev>.<counter>", "tc -s qdisc (netlink)", "count", false,
		"the root qdisc's " + strings.Join(qdiscCounters, ", ") + " (backlog in bytes and qlen are gauges); " +
			"qdisc.<netns>/<dev>.<counter> in a netns (qdisc.a/vtx.requeues); mq sums its per-queue qdiscs; a replaced qdisc starts from 0"},
	{"snmp.<Group>.<Name>", "/proc/net/snmp", "count", false,
		"protocol counters such as Udp.InDatagrams, Udp.RcvbufErrors, Ip.InReceives (Tcp.MaxConn is -1)"},
	{"ksoftirqd.cpu_seconds[.cpuN]", "/proc/PID/stat of ksoftirqd/N", "seconds", true,
		"CPU time (utime+stime) of the ksoftirqd threads, or of ksoftirqd/N"},
	{"napi.cpu_seconds", "/proc/PID/stat of napi/*", "seconds", false,
		"CPU time (utime+stime) of all threaded-NAPI kthreads"},
	{"ksoftirqd.run_us[.cpuN]", "/proc/PID/sched (se.sum_exec_runtime) of ksoftirqd/N", "microseconds", true,
		"time on a CPU of the ksoftirqd threads, to the ns (cpu_seconds counts 10 ms ticks)"},
	{"napi.run_us", "/proc/PID/sched (se.sum_exec_runtime) of napi/*", "microseconds", false,
		"time on a CPU of all threaded-NAPI kthreads, to the ns"},
	{"ksoftirqd.sleeps[.cpuN]", "/proc/PID/status of ksoftirqd/N", "count", true,
		"voluntary context switches: times the threads went to sleep (each a wakeup when they run again)"},
	{"napi.sleeps", "/proc/PID/status of napi/*", "count", false,
		"voluntary context switches of the NAPI kthreads: times they slept"},
	{"ksoftirqd.preempted[.cpuN]", "/proc/PID/status of ksoftirqd/N", "count", true,
		"involuntary context switches: times the threads were preempted while runnable"},
	{"napi.preempted", "/proc/PID/status of napi/*", "count", false,
		"involuntary context switches of the NAPI kthreads"},
	{"napi.<dev>.<napi>.<field>", "netdev genetlink napi-get", "value (gauge)", false,
		"what the kernel reports of a NAPI: " + strings.Join(NAPIFields, ", ") + "; napi is rx-<queue> (the lowest RX queue queue-get links to it; " +
			"without links, the i-th NAPI in id order) or the NAPI id; threaded is 0 disabled, 1 enabled, 2 busy-poll; pid 0 = no kthread; " +
			"the timeouts in ns; napi.<netns>/<dev>.<napi>.<field> in a netns (napi.eth0.rx-0.threaded); needs napi-get (6.12 has it, 6.1 not)"},
	{"napi.polls.<dev>.<napi>.<context>[.cpuN]", "BPF on napi:napi_poll", "count", true,
		"NAPI polls; napi is rx-<queue>, backlog or any; context is " + strings.Join(PollContexts, ", ") + " (softirq includes ksoftirqd); " +
			"napi.polls.any.any.<context> sums every device"},
	{"napi.packets.<dev>.<napi>.<context>[.cpuN]", "BPF on napi:napi_poll", "packets", true,
		"packets those polls returned (the poll's work)"},
}
