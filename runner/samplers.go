package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"napilab/images/wire"
	"napilab/results/metrics"
)

// metricsGroup names the snapshots taken before and after the timeline:
// every source the assertions' metrics need, read together.
const metricsGroup = "metrics"

// pollsGroup names the napi_polls snapshots taken during the timeline.
const pollsGroup = "napi_polls"

// defaultPollsEvery is the napi_polls sampling period without windowed asserts.
const defaultPollsEvery = 200 * time.Millisecond

// pollSnapshots returns the napi_polls reads of the timeline, in order.
func (t *timeline) pollSnapshots() []metrics.PollSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []metrics.PollSnapshot
	for _, s := range t.samples {
		if v, ok := s.Data.Values[wire.SourceNAPIPolls]; ok && (s.Group == pollsGroup || s.Group == metricsGroup) {
			out = append(out, metrics.PollSnapshot{T: s.Host, Text: v})
		}
	}
	return out
}

func (t *timeline) metricSources() []string {
	srcs := []string{wire.SourceSoftirqs, wire.SourceSoftnet, wire.SourceInterrupts, wire.SourceSNMP,
		wire.PrefixTasks + "ksoftirqd/", wire.PrefixTasks + "napi/"}
	if !t.noPolls {
		srcs = append(srcs, wire.SourceNAPIPolls)
	}
	if len(t.s.Inject) > 0 {
		srcs = append(srcs, wire.SourceInject)
	}
	for _, m := range t.s.Metrics() {
		if !slices.Contains(srcs, m.Source) {
			srcs = append(srcs, m.Source)
		}
	}
	return srcs
}

// samplerGroup is a set of sources read together every period.
type samplerGroup struct {
	name    string
	sources []string
	every   time.Duration
}

// samplerGroups returns the scenario's samplers plus those its assertions need.
func (t *timeline) samplerGroups() []samplerGroup {
	var gs []samplerGroup
	for _, sm := range t.s.Samplers {
		gs = append(gs, samplerGroup{name: sm.Source, sources: []string{sm.Source}, every: sm.Every.D()})
	}
	// Who polled each NAPI, for every run's report (and the polls assertions).
	if !t.noPolls {
		gs = append(gs, samplerGroup{name: pollsGroup, sources: t.windowSources(), every: t.pollsEvery()})
	}
	for i, a := range t.s.Asserts {
		if a.Threads != nil {
			f := fileSource(a.Threads.Netns, a.Threads.Path)
			// The file is read before and after the thread list; a snapshot
			// counts only when both reads agree.
			gs = append(gs, samplerGroup{name: fmt.Sprintf("assert%d", i),
				sources: []string{f, wire.PrefixThreads + a.Threads.Prefix, f + "#2"}, every: a.Threads.Every.D()})
		}
	}
	return gs
}

func fileSource(netns, path string) string {
	if netns != "" {
		return wire.PrefixNsFile + netns + ":" + path
	}
	return wire.PrefixFile + path
}

func (t *timeline) sampleLoop(ctx context.Context, g samplerGroup) {
	tick := time.NewTicker(g.every)
	defer tick.Stop()
	for {
		t.snapshot(ctx, g.name, g.sources)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// snapshot reads sources once and records them under group; it returns the
// record's host time, or -1 when the read failed.
func (t *timeline) snapshot(ctx context.Context, group string, sources []string) float64 {
	limit := 5 * time.Second
	if group == metricsGroup {
		// The totals before and after the timeline are measurements a
		// slow (debug, starved) guest must still give: three step deadlines.
		limit = max(limit, 3*t.s.Defaults.Deadline.D())
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var s wire.Sample
	sent := time.Since(t.start).Seconds()
	if err := t.ctl.call(cctx, wire.OpSample, wire.SampleArgs{Sources: sources}, &s); err != nil {
		return -1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	host := time.Since(t.start).Seconds()
	t.samples = append(t.samples, sampleRec{Group: group, Sent: sent, Host: host, Data: s})
	return host
}

// writeSamples stores every snapshot as JSON lines.
func (t *timeline) writeSamples(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	t.mu.Lock()
	for i := range t.samples {
		enc.Encode(&t.samples[i])
	}
	t.mu.Unlock()
	return f.Close()
}
