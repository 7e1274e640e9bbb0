package scenarios

import (
	"fmt"
	"strconv"
	"strings"
)

// Metric names a kernel-state figure: "<family>.<field>[.cpuN]", e.g.
// softirqs.NET_RX, softnet.received_rps.cpu1, interrupts.CAL, snmp.Udp.RcvbufErrors,
// ksoftirqd.cpu_seconds.cpu0. Without .cpuN per-CPU fields are summed.
type Metric struct {
	Name   string
	Family string
	Source string // the agent sample source it is read from
	Field  string
	CPU    int // -1 = summed over CPUs
}

// MetricFamily documents one family of metrics; this table is the one
// place metric names are defined.
type MetricFamily struct {
	Name   string
	Source string   // agent sample source
	File   string   // what the guest reads
	Fields []string // the fixed field names; nil = any (named rows)
	Unit   string
	Doc    string
}

// MetricFamilies are the metrics scenarios can name.
var MetricFamilies = []MetricFamily{
	{"softirqs", "softirqs", "/proc/softirqs", SoftirqNames, "count", "softirq handler runs per CPU (HI TIMER NET_TX NET_RX ...)"},
	{"softnet", "softnet_stat", "/proc/net/softnet_stat",
		[]string{"processed", "dropped", "time_squeeze", "received_rps", "flow_limit_count", "backlog_len", "input_qlen", "process_qlen"},
		"count", "per-CPU backlog figures; received_rps counts RPS IPIs received (6.12 adds input_qlen, process_qlen)"},
	{"interrupts", "interrupts", "/proc/interrupts", nil, "count",
		"per-CPU interrupts: CAL (function-call IPIs, where RPS IPIs land), RES, LOC, or an IRQ by name such as virtio2-input.0"},
	{"snmp", "snmp", "/proc/net/snmp", nil, "count", "protocol counters of the root namespace: Udp.InDatagrams, Udp.RcvbufErrors, Udp.InErrors, Ip.InReceives ..."},
	{"ksoftirqd", "tasks:ksoftirqd/", "/proc/PID/task/TID/stat of ksoftirqd/N", []string{"cpu_seconds"}, "seconds",
		"utime+stime of the ksoftirqd threads; .cpuN is ksoftirqd/N"},
	{"napi", "tasks:napi/", "/proc/PID/task/TID/stat of napi/*", []string{"cpu_seconds"}, "seconds",
		"utime+stime summed over the threaded-NAPI kthreads"},
}

// ParseMetric checks a metric name and says where it is read from.
func ParseMetric(name string) (Metric, error) {
	fam, rest, ok := strings.Cut(name, ".")
	if !ok || rest == "" {
		return Metric{}, fmt.Errorf("metric %q: want <family>.<field>[.cpuN] (families: %s)", name, familyNames())
	}
	var f *MetricFamily
	for i := range MetricFamilies {
		if MetricFamilies[i].Name == fam {
			f = &MetricFamilies[i]
		}
	}
	if f == nil {
		return Metric{}, fmt.Errorf("unknown metric family %q in %q (known: %s)", fam, name, familyNames())
	}
	m := Metric{Name: name, Family: fam, Source: f.Source, Field: rest, CPU: -1}
	if i := strings.LastIndex(rest, ".cpu"); i > 0 {
		n, err := strconv.Atoi(rest[i+4:])
		if err != nil || n < 0 || n >= MaxCPUs {
			return Metric{}, fmt.Errorf("metric %q: want .cpuN with N < %d", name, MaxCPUs)
		}
		m.Field, m.CPU = rest[:i], n
	}
	if f.Fields != nil && !contains(f.Fields, m.Field) {
		return Metric{}, fmt.Errorf("unknown %s field %q in metric %q (known: %s)", fam, m.Field, name, strings.Join(f.Fields, ", "))
	}
	return m, nil
}

func familyNames() string {
	var names []string
	for _, f := range MetricFamilies {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Metrics returns every metric the scenario's assertions read.
func (s *Scenario) Metrics() []Metric {
	var out []Metric
	add := func(name string) {
		if m, err := ParseMetric(name); err == nil {
			out = append(out, m)
		}
	}
	for _, a := range s.Asserts {
		switch {
		case a.Grows != nil:
			add(a.Grows.Metric)
		case a.Delta != nil:
			add(a.Delta.Metric)
		case a.Rate != nil:
			add(a.Rate.Metric)
		case a.Ratio != nil:
			add(a.Ratio.Num)
			add(a.Ratio.Den)
		}
	}
	return out
}
