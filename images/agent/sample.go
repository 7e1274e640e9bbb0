package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"napilab/images/wire"
)

var sourceFiles = map[string]string{
	wire.SourceSoftirqs:   "/proc/softirqs",
	wire.SourceSoftnet:    "/proc/net/softnet_stat",
	wire.SourceInterrupts: "/proc/interrupts",
	wire.SourceSNMP:       "/proc/net/snmp",
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
	return s
}

func (a *agent) read(src string) (string, error) {
	// "source#N" reads the same source again; the suffix only keeps keys apart.
	if i := strings.LastIndexByte(src, '#'); i > 0 {
		src = src[:i]
	}
	if p, ok := sourceFiles[src]; ok {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	switch {
	case strings.HasPrefix(src, wire.PrefixThreads):
		return threads(strings.TrimPrefix(src, wire.PrefixThreads)), nil
	case strings.HasPrefix(src, wire.PrefixFile):
		b, err := os.ReadFile(strings.TrimPrefix(src, wire.PrefixFile))
		return string(b), err
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
