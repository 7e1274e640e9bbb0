package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"napilab/results"
)

// SourceNAPIPolls is the agent's who-polled source (wire.SourceNAPIPolls):
// lines "dev napi context cpu pid polls packets", cumulative.
const SourceNAPIPolls = "napi_polls"

// SourceNAPIThreads lists the napi/ kthreads ("pid comm" lines: the agent's
// threads:<prefix> source), read with the who-polled snapshots when a run
// turns threaded, for the model's kthread rules.
const SourceNAPIThreads = "threads:napi/"

// PollContexts are the execution contexts a polls metric can name: softirq
// (NET_RX softirq wherever it ran, ksoftirqd included), ksoftirqd (the part
// ksoftirqd ran), kthread (napi/ threads), busypoll (a task polling) and any.
var PollContexts = []string{"softirq", "ksoftirqd", "kthread", "busypoll", "any"}

// pollContexts maps a context the agent reports to the metric contexts it counts in.
var pollContexts = map[string][]string{
	"softirq":   {"softirq", "any"},
	"ksoftirqd": {"ksoftirqd", "softirq", "any"},
	"kthread":   {"kthread", "any"},
	"busypoll":  {"busypoll", "any"},
}

// pollField is the Series field of a polls metric: "polls/eth0/rx-0/kthread".
func pollField(what, dev, napi, context string) string {
	return what + "/" + dev + "/" + napi + "/" + context
}

// PollLine is one line of the napi_polls source.
type PollLine struct {
	Dev, NAPI, Context string
	CPU, PID           int
	Polls, Packets     uint64
}

// ParsePolls parses the napi_polls source text.
func ParsePolls(text string) ([]PollLine, error) {
	var out []PollLine
	for _, l := range nonEmptyLines(text) {
		f := strings.Fields(l)
		if len(f) != 7 {
			return nil, fmt.Errorf("bad napi_polls line %s: want \"dev napi context cpu pid polls packets\"", quote(l))
		}
		if _, ok := pollContexts[f[2]]; !ok {
			return nil, fmt.Errorf("bad napi_polls line %s: unknown context %q", quote(l), f[2])
		}
		cpu, cerr := strconv.ParseUint(f[3], 10, 16)
		pid, perr := strconv.ParseUint(f[4], 10, 32)
		polls, oerr := strconv.ParseUint(f[5], 10, 64)
		pkts, kerr := strconv.ParseUint(f[6], 10, 64)
		if err := cmp.Or(cerr, perr, oerr, kerr); err != nil || cpu >= maxCPUs {
			return nil, fmt.Errorf("bad napi_polls line %s: want numbers for cpu, pid, polls and packets", quote(l))
		}
		out = append(out, PollLine{f[0], f[1], f[2], int(cpu), int(pid), polls, pkts})
	}
	return out, nil
}

// AllDevices is the device of the polls metrics that sum every device:
// napi.polls.any.any.<context>.
const AllDevices = "any"

// parsePolls turns napi_polls lines into per-CPU series for every
// (polls|packets, dev, napi or "any", context or an aggregate), and for
// every device at once (dev and napi "any").
func parsePolls(text string) (Series, error) {
	lines, err := ParsePolls(text)
	if err != nil {
		return nil, err
	}
	ncpu := 0
	for _, l := range lines {
		ncpu = max(ncpu, l.CPU+1)
	}
	s := Series{}
	add := func(field string, cpu int, v uint64) {
		if s[field] == nil {
			s[field] = make([]float64, ncpu)
		}
		s[field][cpu] += float64(v)
	}
	for _, l := range lines {
		for _, ctx := range pollContexts[l.Context] {
			for _, dn := range [][2]string{{l.Dev, l.NAPI}, {l.Dev, "any"}, {AllDevices, "any"}} {
				add(pollField("polls", dn[0], dn[1], ctx), l.CPU, l.Polls)
				add(pollField("packets", dn[0], dn[1], ctx), l.CPU, l.Packets)
			}
		}
	}
	return s, nil
}

// parsePollMetric parses "napi.{polls|packets}.<dev>.<napi>.<context>[.cpuN]";
// the device name may hold dots, so it is read from the right.
func parsePollMetric(name, what, rest string) (Ref, error) {
	parts := strings.Split(rest, ".")
	m := Ref{Name: name, Source: SourceNAPIPolls, CPU: -1}
	if n, ok := strings.CutPrefix(parts[len(parts)-1], "cpu"); ok && isDigits(n) && len(parts) > 3 {
		cpu, err := strconv.Atoi(n)
		if err != nil || cpu >= maxCPUs {
			return Ref{}, fmt.Errorf("bad cpu in metric %q, want cpu0 to cpu%d", name, maxCPUs-1)
		}
		m.CPU, parts = cpu, parts[:len(parts)-1]
	}
	if len(parts) < 3 || slices.Contains(parts, "") {
		return Ref{}, fmt.Errorf("bad metric %q, want napi.%s.<dev>.<napi>.<context>[.cpuN] such as napi.%s.eth0.rx-0.kthread", name, what, what)
	}
	ctx, napi, dev := parts[len(parts)-1], parts[len(parts)-2], strings.Join(parts[:len(parts)-2], ".")
	if !slices.Contains(PollContexts, ctx) {
		return Ref{}, fmt.Errorf("unknown poll context %q in metric %q, want one of %s", ctx, name, strings.Join(PollContexts, ", "))
	}
	if !ValidNAPIName(napi) {
		return Ref{}, fmt.Errorf("bad napi %q in metric %q, want rx-<queue>, backlog or any", napi, name)
	}
	m.Field = pollField(what, dev, napi, ctx)
	m.Dev, m.NAPI, m.AnyNetns = dev, napi, true
	return m, nil
}

// ValidNAPIName says whether s names a NAPI of a device in metrics: rx-<queue>,
// backlog, any, or the agent's <role>@<address> for NAPIs without a queue.
func ValidNAPIName(s string) bool {
	if q, ok := strings.CutPrefix(s, "rx-"); ok {
		return isDigits(q)
	}
	if role, addr, ok := strings.Cut(s, "@"); ok {
		return (role == "rx" || role == "tx") && addr != ""
	}
	return s == "backlog" || s == "any"
}

// PollSnapshot is one read of the napi_polls source at a time.
type PollSnapshot struct {
	T    float64 // seconds since the timeline began
	Text string
}

// PollRates turns cumulative snapshots into per-interval rates per NAPI and
// context (summed over CPUs and tasks). Unparsable snapshots are skipped.
func PollRates(snaps []PollSnapshot) []results.PollSeries {
	type key struct{ napi, ctx string }
	type count struct{ polls, pkts uint64 }
	var prev map[key]count
	var prevT float64
	series := map[key]*results.PollSeries{}
	var order []key
	for _, sn := range snaps {
		lines, err := ParsePolls(sn.Text)
		if err != nil {
			continue
		}
		cur := map[key]count{}
		for _, l := range lines {
			k := key{l.Dev + "/" + l.NAPI, l.Context}
			c := cur[k]
			c.polls += l.Polls
			c.pkts += l.Packets
			cur[k] = c
		}
		if prev != nil && sn.T > prevT {
			dt := sn.T - prevT
			for k, c := range cur {
				ps := series[k]
				if ps == nil {
					ps = &results.PollSeries{NAPI: k.napi, Context: k.ctx}
					series[k] = ps
					order = append(order, k)
				}
				p := prev[k]
				ps.T = append(ps.T, sn.T)
				ps.Rate = append(ps.Rate, float64(c.polls-min(p.polls, c.polls))/dt)
				ps.Packets = append(ps.Packets, float64(c.pkts-min(p.pkts, c.pkts))/dt)
			}
		}
		prev, prevT = cur, sn.T
	}
	slices.SortFunc(order, func(a, b key) int { return cmp.Or(cmp.Compare(a.napi, b.napi), cmp.Compare(a.ctx, b.ctx)) })
	out := make([]results.PollSeries, 0, len(order))
	for _, k := range order {
		out = append(out, *series[k])
	}
	return out
}
