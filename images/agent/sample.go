package agent

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"napilab/internal/wire"
)

var sourceFiles = map[string]string{
	wire.SourceSoftirqs:   "/proc/softirqs",
	wire.SourceSoftnet:    "/proc/net/softnet_stat",
	wire.SourceInterrupts: "/proc/interrupts",
	wire.SourceSNMP:       "/proc/net/snmp",
	wire.SourceNetdev:     "/proc/net/dev",
}

// sample reads every source once, as close together as it can.
func (a *agent) sample(sources []string) *wire.Sample {
	s := &wire.Sample{Values: map[string]string{}}
	s.T = uptime()
	for _, src := range sources {
		v, err := a.read(src)
		if err != nil {
			if s.Errors == nil {
				s.Errors = map[string]string{}
			}
			s.Errors[src] = err.Error()
			continue
		}
		s.Values[src] = v
	}
	s.Took = uptime() - s.T
	return s
}

func (a *agent) read(src string) (string, error) {
	// "source#N" reads the same source again; the suffix only keeps keys apart.
	if i := strings.LastIndexByte(src, '#'); i > 0 {
		src = src[:i]
	}
	if p, ok := sourceFiles[src]; ok {
		b, err := os.ReadFile(a.ns.path("", p))
		return string(b), err
	}
	switch {
	case src == wire.SourceNAPIPolls:
		return a.polls.read()
	case src == wire.SourceInject:
		return a.probe.read()
	case src == wire.SourceCover:
		return a.cover.read()
	case src == wire.SourceQdisc:
		return a.qdiscStats("")
	case strings.HasPrefix(src, wire.PrefixQdisc):
		return a.qdiscStats(strings.TrimPrefix(src, wire.PrefixQdisc))
	case src == wire.SourceNAPI:
		return a.napiStats("")
	case strings.HasPrefix(src, wire.PrefixNAPI):
		return a.napiStats(strings.TrimPrefix(src, wire.PrefixNAPI))
	case strings.HasPrefix(src, wire.PrefixThreads):
		return threads(strings.TrimPrefix(src, wire.PrefixThreads)), nil
	case strings.HasPrefix(src, wire.PrefixTasks):
		return tasks(strings.TrimPrefix(src, wire.PrefixTasks)), nil
	case strings.HasPrefix(src, wire.PrefixSched):
		return sched(strings.TrimPrefix(src, wire.PrefixSched)), nil
	case strings.HasPrefix(src, wire.PrefixFile):
		b, err := os.ReadFile(strings.TrimPrefix(src, wire.PrefixFile))
		return string(b), err
	case strings.HasPrefix(src, wire.PrefixEthtool):
		ns, dev, ok := strings.Cut(strings.TrimPrefix(src, wire.PrefixEthtool), ":")
		if !ok {
			return "", fmt.Errorf("want ethtool:<netns>:<dev>")
		}
		return a.ns.ethtoolStats(ns, dev)
	case strings.HasPrefix(src, wire.PrefixNsFile):
		ns, path, ok := strings.Cut(strings.TrimPrefix(src, wire.PrefixNsFile), ":")
		if !ok {
			return "", fmt.Errorf("want nsfile:<netns>:<path>")
		}
		return a.ns.readFile(wire.File{Netns: ns, Path: path})
	}
	return "", fmt.Errorf("unknown source %q", src)
}

// threads lists "pid comm" of tasks whose comm starts with prefix.
func threads(prefix string) string {
	ents, _ := os.ReadDir("/proc")
	var lines []string
	for _, e := range ents {
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		c := strings.TrimSpace(string(comm))
		if strings.HasPrefix(c, prefix) {
			lines = append(lines, e.Name()+" "+c)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// taskStat is what tasks reads from /proc/PID/task/TID/stat.
type taskStat struct {
	Comm         string
	Utime, Stime uint64 // clock ticks
	CPU          int    // processor it last ran on
}

// parseStat parses a /proc/PID/stat line. Fields are counted after the
// last ')' since comm may hold spaces and parentheses.
func parseStat(s string) (taskStat, error) {
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return taskStat{}, fmt.Errorf("bad stat line %q", s)
	}
	// f[0] is field 3 (state).
	f := strings.Fields(s[close+1:])
	if len(f) < 39-2 {
		return taskStat{}, fmt.Errorf("short stat line %q", s)
	}
	st := taskStat{Comm: s[open+1 : close]}
	var err1, err2, err3 error
	st.Utime, err1 = strconv.ParseUint(f[14-3], 10, 64)
	st.Stime, err2 = strconv.ParseUint(f[15-3], 10, 64)
	st.CPU, err3 = strconv.Atoi(f[39-3])
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return taskStat{}, fmt.Errorf("bad stat line %q: %w", s, err)
		}
	}
	return st, nil
}

// tasks lists "pid comm utime stime processor" for every task whose comm
// starts with prefix, sorted by pid.
func tasks(prefix string) string {
	return taskLines(func(pid int, dir string) (string, bool) {
		b, err := os.ReadFile(dir + "/stat")
		if err != nil {
			return "", false // exited
		}
		st, err := parseStat(string(b))
		if err != nil || !strings.HasPrefix(st.Comm, prefix) {
			return "", false
		}
		return fmt.Sprintf("%d %s %d %d %d", pid, st.Comm, st.Utime, st.Stime, st.CPU), true
	})
}

// taskLines joins the line each task gives (those that give one), sorted
// by pid.
func taskLines(line func(pid int, dir string) (string, bool)) string {
	type row struct {
		pid  int
		line string
	}
	var rows []row
	for pid, dir := range eachTask("/proc") {
		if l, ok := line(pid, dir); ok {
			rows = append(rows, row{pid, l})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].pid < rows[j].pid })
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = r.line
	}
	return strings.Join(lines, "\n")
}
