package runner

import (
	"slices"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/model"
	"napilab/scenarios"
)

// Windowed assertions read the snapshots taken during the timeline (the
// napi_polls group carries every source they need) instead of the two
// taken around it.

// readAt places snapshots on the host's timeline at the middle of their
// reading, on the guest's clock (results.GuestClock).
func readAt(samples []sampleRec) func(*sampleRec) float64 {
	c := guestClock(samples)
	return func(s *sampleRec) float64 {
		if s.Data.T <= 0 {
			return s.Host
		}
		return c.At(s.Host, s.Data.T+s.Data.Took/2)
	}
}

// guestClock learns the guest clock's offset from the snapshots.
func guestClock(samples []sampleRec) results.GuestClock {
	return results.NewGuestClock(len(samples), func(i int) (float64, float64, float64) {
		return samples[i].Host, samples[i].Data.T, samples[i].Data.Took
	})
}

// pollsEvery is the napi_polls period: fine enough that every windowed
// assertion's window holds about five snapshots, never below 20 ms.
func (t *timeline) pollsEvery() time.Duration {
	every := defaultPollsEvery
	for _, a := range t.s.Asserts {
		var w time.Duration
		switch {
		case a.Each != "":
			w = a.Within.D()
		case a.During != nil && a.During.After != "":
			w = a.During.For.D() - a.During.Skip.D()
		default:
			continue
		}
		every = min(every, w/5)
	}
	return max(every, 20*time.Millisecond)
}

// windowSources are the sources windowed assertions read, sampled with napi_polls.
func (t *timeline) windowSources() []string {
	srcs := []string{wire.SourceNAPIPolls}
	// The kthread rules (results/model). Listing the threads costs the
	// guest a walk of /proc (45 ms a read under TCG against 1-5 ms
	// without): only where a rule needs it.
	if t.s.SetsThreaded() && model.ReadsThreads(t.kernel) {
		srcs = append(srcs, metrics.SourceNAPIThreads)
	}
	// The rps rule: RPS IPIs per CPU (a read of softnet_stat is cheap).
	if t.s.SetsRPS() {
		srcs = append(srcs, wire.SourceSoftnet)
	}
	for _, a := range t.s.Asserts {
		if a.During == nil && a.Each == "" {
			continue
		}
		for _, m := range (&scenarios.Scenario{Asserts: []*scenarios.Assert{a}}).Metrics() {
			if !slices.Contains(srcs, m.Source) {
				srcs = append(srcs, m.Source)
			}
		}
	}
	return srcs
}
