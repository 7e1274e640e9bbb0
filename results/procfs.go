package results

import (
	"fmt"
	"strconv"
	"strings"
)

// Softirqs is /proc/softirqs: per softirq name, one counter per CPU.
type Softirqs map[string][]uint64

// ParseSoftirqs parses /proc/softirqs.
func ParseSoftirqs(text string) (Softirqs, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "CPU0") {
		return nil, fmt.Errorf("not /proc/softirqs: header %q", firstLine(text))
	}
	ncpu := len(strings.Fields(lines[0]))
	out := Softirqs{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != ncpu+1 || !strings.HasSuffix(f[0], ":") {
			return nil, fmt.Errorf("bad /proc/softirqs line %q", l)
		}
		vals := make([]uint64, ncpu)
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad /proc/softirqs line %q: %w", l, err)
			}
			vals[i] = v
		}
		out[strings.TrimSuffix(f[0], ":")] = vals
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

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
