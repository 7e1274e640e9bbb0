package runner

import (
	"fmt"
	"sort"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
)

// metricValue reads a metric from one snapshot.
func metricValue(m metrics.Ref, s wire.Sample) (float64, error) {
	text, ok := s.Values[m.Source]
	if !ok {
		return 0, fmt.Errorf("%s was not sampled: %s", m.Source, s.Errors[m.Source])
	}
	series, err := metrics.ParseSource(m.Source, text)
	if err != nil {
		return 0, err
	}
	v, ok := m.From(series)
	if !ok {
		return 0, fmt.Errorf("no %s in %s", m.Name, m.Source)
	}
	return v, nil
}

// loadResults summarises every load that ran.
func (t *timeline) loadResults() []results.Load {
	t.mu.Lock()
	clock := guestClock(t.samples)
	t.mu.Unlock()
	var out []results.Load
	for _, name := range sortedLoadNames(t.stats) {
		lr := t.stats[name]
		l := results.Load{Name: name, Sent: lr.sent, SendErrors: lr.sendErrors}
		sl := t.s.Loads[name]
		if sl != nil {
			l.Dev, l.Netns = sl.ArrivesOn()
			l.FromNetns, l.FromHost, l.Routed = sl.From.Netns, sl.From.Host, sl.Routed
			if lr.sink != nil {
				l.Kind = sl.Kind
			}
		}
		switch {
		case sl == nil || !sl.Datagrams():
			// A TCP sender's writes wait in its socket for the window, an
			// rr client for answers: what they sent is not on the wire.
		case lr.sending != nil:
			l.Sending, l.SendingFrom = lr.sending, lr.sendingFrom
		case lr.sender != nil && lr.sender.Start > 0 && clock.Known():
			l.Sending, l.SendingFrom = lr.sender.Buckets, clock.At(0, lr.sender.Start)
		}
		if lr.sender != nil && lr.sender.Latency != nil {
			l.Latency = lr.sender.Latency
		}
		if lr.sink != nil {
			l.XSK = xskSummary(lr.sink.XSK)
			l.Bytes = lr.sink.Bytes
			l.Received, l.Undrained = lr.sink.Packets, lr.sink.Undrained
			per := 1000 / wire.BucketWidthMs
			gap, longest := 0, 0
			started := false
			for i, v := range lr.sink.Buckets {
				if i%per == 0 {
					l.PerSecond = append(l.PerSecond, 0)
				}
				l.PerSecond[len(l.PerSecond)-1] += v
				started = started || v > 0
				if started && v == 0 {
					gap++
					longest = max(longest, gap)
				} else {
					gap = 0
				}
			}
			l.MaxGapMs = longest * wire.BucketWidthMs
		}
		out = append(out, l)
	}
	return out
}

func sortedLoadNames(m map[string]*loadResult) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
