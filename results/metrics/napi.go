package metrics

import (
	"fmt"
	"napilab/internal/wire"
	"slices"
	"strconv"
	"strings"
)

// The napi source: what the netdev family's napi-get reports of every NAPI
// (internal/wire: SourceNAPI), NAPIPrefix + netns for another namespace.
const (
	SourceNAPI = "napi"
	NAPIPrefix = "napi:"
)

// NAPIFields are the values of a napi source line: the NAPI's id, device
// index, IRQ, kthread pid (0: none), threaded mode (0 disabled, 1 enabled,
// 2 busy-poll), defer_hard_irqs, and the timeouts in nanoseconds.
var NAPIFields = []string{"id", "ifindex", "irq", "pid", "threaded", "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout"}

// SourceNetns returns the netns of a per-namespace source (qdisc:<netns>,
// napi:<netns>); ok is false for other sources.
func SourceNetns(src string) (netns string, ok bool) {
	for _, p := range []string{wire.PrefixQdisc, NAPIPrefix} {
		if ns, ok := strings.CutPrefix(src, p); ok {
			return ns, true
		}
	}
	return "", false
}

// parseNAPI parses the agent's napi lines "<dev> <napi> name value…" into
// "<dev>.<napi>.<name>" fields. A NAPI without a kthread has pid 0; the
// other attributes the kernel did not send stay absent (irq without an
// IRQ, the settings an old kernel lacks). No lines is a valid snapshot.
func parseNAPI(text string) (Series, error) {
	s := Series{}
	for _, l := range nonEmptyLines(text) {
		f := strings.Fields(l)
		if len(f) < 2 || len(f)%2 != 0 {
			return nil, fmt.Errorf("bad napi line %s: want \"dev napi\" and name/value pairs", quote(l))
		}
		key := f[0] + "." + f[1]
		if _, dup := s[key+".pid"]; dup {
			return nil, fmt.Errorf("bad napi line %s: a second %s NAPI of %s", quote(l), f[1], f[0])
		}
		s[key+".pid"] = []float64{0}
		for i := 2; i < len(f); i += 2 {
			if !slices.Contains(NAPIFields, f[i]) {
				return nil, fmt.Errorf("bad napi line %s: unknown field %s", quote(l), f[i])
			}
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad napi line %s: %s: %w", quote(l), f[i], err)
			}
			s[key+"."+f[i]] = []float64{float64(v)}
		}
	}
	return s, nil
}

// napiMetric says whether "napi.<rest>" names a napi source metric
// (<dev>.<napi>.<field>) rather than napi.cpu_seconds.
func napiMetric(rest string) bool { return strings.Count(rest, ".") >= 2 }

// parseNAPIMetric parses the rest of "napi.[<netns>/]<dev>.<napi>.<field>".
func parseNAPIMetric(name, rest string) (Ref, error) {
	const want = "want napi.<dev>.<napi>.<field> or napi.<netns>/<dev>.<napi>.<field> such as napi.eth0.rx-0.threaded"
	i := strings.LastIndexByte(rest, '.')
	j := strings.LastIndexByte(rest[:i], '.')
	where, napi, field := rest[:j], rest[j+1:i], rest[i+1:]
	if !slices.Contains(NAPIFields, field) {
		return Ref{}, fmt.Errorf("unknown napi field %q in metric %q, want one of %s", field, name, strings.Join(NAPIFields, ", "))
	}
	if q, _ := strings.CutPrefix(napi, "rx-"); !isDigits(q) {
		return Ref{}, fmt.Errorf("bad napi %q in metric %q, want rx-<queue> or a NAPI id", napi, name)
	}
	m := Ref{Name: name, Source: SourceNAPI, CPU: -1}
	dev := where
	if ns, d, ok := strings.Cut(where, "/"); ok {
		if ns == "" {
			return Ref{}, fmt.Errorf("bad metric %q: empty netns before /, %s", name, want)
		}
		m.Source, dev = NAPIPrefix+ns, d
	}
	if dev == "" || strings.ContainsAny(dev, "/ \t\r\n") {
		return Ref{}, fmt.Errorf("bad device %q in metric %q, %s", dev, name, want)
	}
	m.Field = dev + "." + napi + "." + field
	m.Dev, m.NAPI = dev, napi
	if ns, ok := SourceNetns(m.Source); ok {
		m.Netns = ns
	}
	return m, nil
}
