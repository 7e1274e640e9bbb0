package metrics

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/suggest"
	"napilab/internal/wire"
)

// Softirqs is /proc/softirqs: per softirq name, one counter per CPU.
type Softirqs map[string][]uint64

// ParseSoftirqs parses /proc/softirqs: a "CPU0 CPU1 …" header (every possible
// CPU), then one "NAME: count…" row per softirq.
func ParseSoftirqs(text string) (Softirqs, error) {
	lines := nonEmptyLines(text)
	ncpu := 0
	if len(lines) > 0 {
		ncpu = cpuHeader(lines[0])
	}
	if len(lines) < 2 || ncpu == 0 {
		return nil, fmt.Errorf("not /proc/softirqs: header %s", quote(firstLine(text)))
	}
	out := Softirqs{}
	for _, l := range lines[1:] {
		name, vals, desc, err := parseRow(l, ncpu)
		if err == nil && (len(vals) != ncpu || len(desc) > 0) {
			err = fmt.Errorf("want a name and %d counts", ncpu)
		}
		if _, dup := out[name]; err == nil && dup {
			err = fmt.Errorf("%s listed twice", name)
		}
		if err != nil {
			return nil, fmt.Errorf("bad /proc/softirqs line %s: %w", quote(l), err)
		}
		out[name] = vals
	}
	return out, nil
}

// Value returns a softirq's count on one CPU, or summed over CPUs when cpu < 0.
func (s Softirqs) Value(name string, cpu int) (uint64, bool) {
	vals, ok := s[name]
	if !ok || cpu >= len(vals) {
		return 0, false
	}
	if cpu >= 0 {
		return vals[cpu], true
	}
	var sum uint64
	for _, v := range vals {
		sum += v
	}
	return sum, true
}

// parseInterrupts parses /proc/interrupts: a "CPU0 CPU1 …" header (online
// CPUs), then rows "LABEL: count… [description]". Named rows (CAL, LOC, …)
// keep their label; numbered IRQ rows are keyed by their last word, the action
// name (virtio2-input.0), summed when IRQs share it. Rows printing one count
// and no description (ERR, MIS) are single values.
func parseInterrupts(text string) (Series, error) {
	lines := nonEmptyLines(text)
	ncpu := 0
	if len(lines) > 0 {
		ncpu = cpuHeader(lines[0])
	}
	if ncpu == 0 {
		return nil, fmt.Errorf("not /proc/interrupts: header %s", quote(firstLine(text)))
	}
	s := Series{}
	for _, l := range lines[1:] {
		key, vals, desc, err := parseRow(l, ncpu)
		irq := isDigits(key)
		switch {
		case err != nil:
		case irq && len(vals) != ncpu:
			err = fmt.Errorf("IRQ %s has %d counts, want %d", key, len(vals), ncpu)
		case len(vals) != ncpu && (len(vals) != 1 || len(desc) > 0):
			err = fmt.Errorf("%s has %d counts, want %d or 1", key, len(vals), ncpu)
		}
		if err != nil {
			return nil, fmt.Errorf("bad /proc/interrupts line %s: %w", quote(l), err)
		}
		if irq && len(desc) > 0 {
			key = desc[len(desc)-1]
		}
		old, dup := s[key]
		if dup && (!irq || len(old) != ncpu) {
			return nil, fmt.Errorf("bad /proc/interrupts line %s: %s listed twice", quote(l), key)
		}
		if !dup {
			old = make([]float64, len(vals))
			s[key] = old
		}
		for i, v := range vals {
			old[i] += float64(v)
		}
	}
	return s, nil
}

// snmpFields are the counters /proc/net/snmp prints (net/ipv4/proc.c, 6.1
// to 7.3; Ip.OutTransmits from 6.3); IcmpMsg's are InType<N> and OutType<N>.
var snmpFields = func() map[string][]string {
	icmp := []string{"DestUnreachs", "TimeExcds", "ParmProbs", "SrcQuenchs", "Redirects", "Echos", "EchoReps",
		"Timestamps", "TimestampReps", "AddrMasks", "AddrMaskReps"}
	icmpFields := []string{"InMsgs", "InErrors", "InCsumErrors", "OutMsgs", "OutErrors", "OutRateLimitGlobal", "OutRateLimitHost"}
	for _, n := range icmp {
		icmpFields = append(icmpFields, "In"+n, "Out"+n)
	}
	udp := []string{"InDatagrams", "NoPorts", "InErrors", "OutDatagrams", "RcvbufErrors", "SndbufErrors", "InCsumErrors",
		"IgnoredMulti", "MemErrors"}
	return map[string][]string{
		"Ip": {"Forwarding", "DefaultTTL", "InReceives", "InHdrErrors", "InAddrErrors", "ForwDatagrams", "InUnknownProtos",
			"InDiscards", "InDelivers", "OutRequests", "OutDiscards", "OutNoRoutes", "ReasmTimeout", "ReasmReqds", "ReasmOKs",
			"ReasmFails", "FragOKs", "FragFails", "FragCreates", "OutTransmits"},
		"Icmp": icmpFields,
		"Tcp": {"RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn", "ActiveOpens", "PassiveOpens", "AttemptFails", "EstabResets",
			"CurrEstab", "InSegs", "OutSegs", "RetransSegs", "InErrs", "OutRsts", "InCsumErrors"},
		"Udp":     udp,
		"UdpLite": udp,
	}
}()

var icmpMsgField = regexp.MustCompile(`^(In|Out)Type[0-9]{1,3}$`)

// checkSNMP says whether Group.Name is a counter /proc/net/snmp has.
func checkSNMP(metric, field string) error {
	group, name, _ := strings.Cut(field, ".")
	if group == "IcmpMsg" {
		if !icmpMsgField.MatchString(name) {
			return fmt.Errorf("unknown snmp field %q in metric %q: IcmpMsg has InType<N> and OutType<N>", field, metric)
		}
		return nil
	}
	names, ok := snmpFields[group]
	if !ok {
		groups := append(slices.Sorted(maps.Keys(snmpFields)), "IcmpMsg")
		return fmt.Errorf("unknown snmp group %q in metric %q, want one of %s%s", group, metric, strings.Join(groups, ", "), didYouMean(group, groups))
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("unknown snmp field %q in metric %q%s", field, metric, didYouMean(name, names))
	}
	return nil
}

// checkNetdev says whether <dev>.<counter> names a /proc/net/dev column.
func checkNetdev(metric, field string) error {
	i := strings.LastIndexByte(field, '.')
	if i <= 0 {
		return fmt.Errorf("bad metric %q, want netdev.<dev>.<counter>", metric)
	}
	if c := field[i+1:]; !slices.Contains(netdevColumns, c) {
		return fmt.Errorf("unknown netdev counter %q in metric %q%s", c, metric, didYouMean(c, netdevColumns))
	}
	return nil
}

// didYouMean suggests the name s was meant to be, or lists them.
func didYouMean(s string, names []string) string {
	if best := suggest.Closest(s, names); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (known: " + strings.Join(names, ", ") + ")"
}

// parseSNMP parses /proc/net/snmp: pairs of "Group: Name…" and "Group: value…"
// lines, giving "Group.Name" fields with single values (Tcp MaxConn is -1).
func parseSNMP(text string) (Series, error) {
	lines := nonEmptyLines(text)
	if len(lines) == 0 || len(lines)%2 != 0 {
		return nil, fmt.Errorf("not /proc/net/snmp: %d lines, want pairs of names and values", len(lines))
	}
	s := Series{}
	for i := 0; i < len(lines); i += 2 {
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		group, ok := strings.CutSuffix(names[0], ":")
		if !ok || group == "" || vals[0] != names[0] || len(vals) != len(names) {
			return nil, fmt.Errorf("bad /proc/net/snmp lines %d-%d: %s and %s do not pair up", i+1, i+2, quote(lines[i]), quote(lines[i+1]))
		}
		for j, name := range names[1:] {
			key := group + "." + name
			v, err := parseInteger(vals[j+1])
			if _, dup := s[key]; err == nil && dup {
				err = fmt.Errorf("listed twice")
			}
			if err != nil {
				return nil, fmt.Errorf("bad /proc/net/snmp value %s: %w", key, err)
			}
			s[key] = []float64{v}
		}
	}
	return s, nil
}

// softnetColumns names the columns of /proc/net/softnet_stat in the order
// softnet_seq_show prints them (net/core/net-procfs.c); "" marks columns that
// are always 0 (fastroute, cpu_collision). Kernels print a prefix of it.
var softnetColumns = [...]string{"processed", "dropped", "time_squeeze", "", "", "", "", "", "",
	"received_rps", "flow_limit_count", "backlog_len", "cpu", "input_qlen", "process_qlen"}

// parseSoftnet parses /proc/net/softnet_stat: one line of %08x columns per
// online CPU. The column count gives the layout: 10 (before 3.11), 11 (adds
// flow_limit_count), 13 (adds backlog_len and the cpu id; 6.1), 15 (adds
// input_qlen and process_qlen; 6.4 on, so 6.12).
func parseSoftnet(text string) (Series, error) {
	lines := nonEmptyLines(text)
	if len(lines) == 0 {
		return nil, fmt.Errorf("empty /proc/net/softnet_stat")
	}
	ncol := len(strings.Fields(lines[0]))
	switch ncol {
	case 10, 11, 13, 15:
	default:
		return nil, fmt.Errorf("/proc/net/softnet_stat has %d columns, want 10, 11, 13 (6.1) or 15 (6.12)", ncol)
	}
	s := Series{}
	for _, name := range softnetColumns[:ncol] {
		if name != "" {
			s[name] = make([]float64, len(lines))
		}
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != ncol {
			return nil, fmt.Errorf("bad /proc/net/softnet_stat line %d %s: %d columns, line 1 has %d", i+1, quote(l), len(f), ncol)
		}
		vals, err := parseUints(f, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("bad /proc/net/softnet_stat line %d %s: %w", i+1, quote(l), err)
		}
		for c, v := range vals {
			if name := softnetColumns[c]; name != "" {
				s[name][i] = float64(v)
			}
		}
	}
	return s, nil
}

// cpuHeader returns the number of CPU columns in a "CPU0 CPU1 …" header, 0 if
// the line is not one.
func cpuHeader(line string) int {
	f := strings.Fields(line)
	for _, c := range f {
		if n, ok := strings.CutPrefix(c, "CPU"); !ok || !isDigits(n) {
			return 0
		}
	}
	return len(f)
}

// parseRow splits "LABEL: count… [description]" into the label, up to max
// leading counts (at least one) and the rest.
func parseRow(line string, max int) (label string, vals []uint64, rest []string, err error) {
	f := strings.Fields(line)
	label, ok := strings.CutSuffix(f[0], ":")
	n := 0
	for n < max && 1+n < len(f) && isDigits(f[1+n]) {
		n++
	}
	if !ok || label == "" || n == 0 {
		return "", nil, nil, fmt.Errorf("want \"LABEL: count…\"")
	}
	vals, err = parseUints(f[1:1+n], 10, 64)
	return label, vals, f[1+n:], err
}

func parseUints(fs []string, base, bits int) ([]uint64, error) {
	out := make([]uint64, len(fs))
	for i, s := range fs {
		v, err := strconv.ParseUint(s, base, bits)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// parseInteger parses a signed or unsigned 64-bit decimal.
func parseInteger(s string) (float64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return float64(v), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return float64(v), err
}

func floats(vals []uint64) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		out[i] = float64(v)
	}
	return out
}

func nonEmptyLines(text string) []string {
	var out []string
	for l := range strings.Lines(text) {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, "\r\n"))
		}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quote quotes a line for an error message, cut to a readable length.
func quote(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strconv.Quote(s)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// netdevColumns are /proc/net/dev's columns after "dev:".
var netdevColumns = []string{"rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame", "rx_compressed", "rx_multicast",
	"tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls", "tx_carrier", "tx_compressed"}

// parseNetdev parses /proc/net/dev into "<dev>.<counter>" fields.
func parseNetdev(text string) (Series, error) {
	s := Series{}
	for _, l := range strings.Split(text, "\n") {
		dev, rest, ok := strings.Cut(l, ":")
		if !ok || strings.Contains(dev, "|") {
			continue // the two header lines
		}
		f := strings.Fields(rest)
		if len(f) != len(netdevColumns) {
			return nil, fmt.Errorf("bad /proc/net/dev line %q: %d columns, want %d", l, len(f), len(netdevColumns))
		}
		for i, v := range f {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad /proc/net/dev line %q: %w", l, err)
			}
			s[strings.TrimSpace(dev)+"."+netdevColumns[i]] = []float64{float64(n)}
		}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("no devices in /proc/net/dev text")
	}
	return s, nil
}

// qdiscCounters are the statistics of a qdisc source line, as the agent
// writes them (internal/wire: wire.SourceQdisc).
var qdiscCounters = []string{"packets", "bytes", "drops", "overlimits", "requeues", "backlog", "qlen"}

// parseQdisc parses the agent's qdisc lines "<dev> <parent> <handle> <kind>
// name value…" into "<dev>.<name>" fields of each device's root qdisc (parent
// "root"); the other qdiscs' lines are checked but not kept. No lines is a
// valid snapshot: a namespace whose devices have no qdisc yet.
func parseQdisc(text string) (Series, error) {
	s := Series{}
	for _, l := range nonEmptyLines(text) {
		f := strings.Fields(l)
		if len(f) < 4 || len(f)%2 != 0 {
			return nil, fmt.Errorf("bad qdisc line %s: want \"dev parent handle kind\" and name/value pairs", quote(l))
		}
		dev, root := f[0], f[1] == "root"
		if _, dup := s[dev+".packets"]; root && dup {
			return nil, fmt.Errorf("bad qdisc line %s: a second root qdisc on %s", quote(l), dev)
		}
		vals := map[string]float64{}
		for i := 4; i < len(f); i += 2 {
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad qdisc line %s: %s: %w", quote(l), f[i], err)
			}
			vals[f[i]] = float64(v)
		}
		for _, c := range qdiscCounters {
			if _, ok := vals[c]; !ok {
				return nil, fmt.Errorf("bad qdisc line %s: no %s", quote(l), c)
			}
		}
		if root {
			for name, v := range vals {
				s[dev+"."+name] = []float64{v}
			}
		}
	}
	return s, nil
}

// parseQdiscMetric parses the rest of "qdisc.[<netns>/]<dev>.<counter>".
func parseQdiscMetric(name, rest string) (Ref, error) {
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return Ref{}, fmt.Errorf("bad metric %q, want qdisc.<dev>.<counter> or qdisc.<netns>/<dev>.<counter>", name)
	}
	where, counter := rest[:i], rest[i+1:]
	if !slices.Contains(qdiscCounters, counter) {
		return Ref{}, fmt.Errorf("unknown qdisc counter %q in metric %q, want one of %s", counter, name, strings.Join(qdiscCounters, ", "))
	}
	m := Ref{Name: name, Source: wire.SourceQdisc, Field: where + "." + counter, CPU: -1}
	if ns, dev, ok := strings.Cut(where, "/"); ok {
		m.Source, m.Field = wire.PrefixQdisc+ns, dev+"."+counter
		where = dev
		if ns == "" {
			return Ref{}, fmt.Errorf("bad metric %q: empty netns before /", name)
		}
	}
	if where == "" || strings.ContainsAny(where, "/ \t\r\n") {
		return Ref{}, fmt.Errorf("bad device %q in metric %q, want qdisc.<dev>.<counter> or qdisc.<netns>/<dev>.<counter>", where, name)
	}
	m.Dev = where
	if ns, ok := SourceNetns(m.Source); ok {
		m.Netns = ns
	}
	return m, nil
}
