package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/model"
	"napilab/scenarios"
)

// metricsGroup names the snapshots taken before and after the timeline:
// every source the assertions' metrics need, read together.
const metricsGroup = results.MetricsGroup

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
		wire.PrefixTasks + "ksoftirqd/", wire.PrefixTasks + "napi/", wire.PrefixSched + "ksoftirqd/", wire.PrefixSched + "napi/"}
	if !t.noPolls {
		srcs = append(srcs, wire.SourceNAPIPolls)
	}
	if len(t.s.Inject) > 0 {
		srcs = append(srcs, wire.SourceInject)
	}
	if t.covered {
		srcs = append(srcs, wire.SourceCover)
	}
	for _, m := range t.s.Metrics() {
		if !slices.Contains(srcs, m.Source) {
			srcs = append(srcs, m.Source)
		}
	}
	for _, src := range model.Sources(t.udpLoads()) {
		if !slices.Contains(srcs, src) {
			srcs = append(srcs, src)
		}
	}
	return srcs
}

// udpLoads are the scenario's udp loads as the conservation invariant
// sees them: where each arrives and where its sender is.
func (t *timeline) udpLoads() []results.Load {
	var out []results.Load
	for _, name := range slices.Sorted(maps.Keys(t.s.Loads)) {
		l := t.s.Loads[name]
		if l.Kind != "udp" {
			continue
		}
		r := results.Load{Name: name, Kind: l.Kind, FromNetns: l.From.Netns, FromHost: l.From.Host, Routed: l.Routed}
		r.Dev, r.Netns = l.ArrivesOn()
		out = append(out, r)
	}
	return out
}

// The settle reads follow the final metrics snapshot while packets the
// udp loads sent still arrive (a slow guest behind a host flood: its ring
// and the tap hold hundreds), so that conservation judges an end state.
const (
	settleEvery = 200 * time.Millisecond
	settleReads = 15
)

// settle reads conservation's sources every settleEvery until nothing
// arrived in the loads' namespaces between two reads, at most settleReads
// times; the model judges only a settled end (model.Settled).
func (t *timeline) settle(ctx context.Context) {
	loads := t.udpLoads()
	if len(loads) == 0 {
		return
	}
	srcs := model.Sources(loads)
	prev := t.lastValues()
	for range settleReads {
		select {
		case <-ctx.Done():
			return
		case <-time.After(settleEvery):
		}
		if t.snapshot(ctx, results.SettleGroup, srcs) < 0 {
			return
		}
		cur := t.lastValues()
		if model.Settled(prev, cur, loads) {
			return
		}
		prev = cur
	}
}

// lastValues is the last sample's sources.
func (t *timeline) lastValues() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.samples) == 0 {
		return nil
	}
	return t.samples[len(t.samples)-1].Data.Values
}

// hostSends says a udp load's sender is the runner's injector.
func (t *timeline) hostSends() bool {
	return slices.ContainsFunc(t.udpLoads(), func(l results.Load) bool { return l.FromHost })
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
			f := scenarios.FileSource(a.Threads.Netns, a.Threads.Path)
			// The file is read before and after the thread list; a snapshot
			// counts only when both reads agree.
			gs = append(gs, samplerGroup{name: fmt.Sprintf("assert%d", i),
				sources: []string{f, wire.PrefixThreads + a.Threads.Prefix, f + "#2"}, every: a.Threads.Every.D()})
		}
	}
	return gs
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
	if (group == metricsGroup || group == results.SettleGroup) && t.host != nil && t.hostSends() {
		// The host's side of the taps, read as the guest's counters were.
		if s.Values == nil {
			s.Values = map[string]string{}
		}
		if v, err := t.host.Counters(); err == nil {
			s.Values[model.HostTapsSource] = v
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	host := time.Since(t.start).Seconds()
	rec := sampleRec{Group: group, Sent: sent, Host: host, Data: s}
	if !t.keepSample(&rec) {
		return -1
	}
	t.samples = append(t.samples, rec)
	return host
}

// The samples' totals, as samples.jsonl holds them: periodic samplers stop
// at samplerBytes, so that the snapshots assertions measure between (the
// metrics before and after the timeline, the steps' edges) still fit under
// results.MaxSamplesFile, past which nothing more is kept (an assertion
// that needed a snapshot not kept is not measured: ERROR).
const samplerBytes = results.MaxSamplesFile / 4 * 3

// keepSample says whether rec fits the totals and counts it; the first
// sample that does not is noted (samplesCut). Callers hold t.mu.
func (t *timeline) keepSample(rec *sampleRec) bool {
	b, err := json.Marshal(rec)
	if err != nil {
		return false
	}
	limit := int64(results.MaxSamplesFile)
	if rec.Group != metricsGroup && rec.Group != edgesGroup {
		limit = samplerBytes
	}
	n := int64(len(b)) + 1 // its line in samples.jsonl
	if t.sampleBytes+n > limit {
		what := "periodic samples"
		if rec.Group == metricsGroup || rec.Group == edgesGroup {
			what = "all samples"
		}
		note := fmt.Sprintf("%s not kept from %.2f s on (%d bytes kept, limit %d)", what, rec.Host, t.sampleBytes, limit)
		switch {
		case t.samplesCut == "":
			t.samplesCut = note
		case what == "all samples" && !strings.Contains(t.samplesCut, what):
			t.samplesCut += "; " + note
		}
		return false
	}
	t.sampleBytes += n
	return true
}

// samplesDropped is the note for the result's Dropped, "" = all kept.
func (t *timeline) samplesDropped() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.samplesCut
}

// writeSamples stores every snapshot as JSON lines, at most
// results.MaxSamplesFile bytes (keepSample's totals), and syncs them.
func (t *timeline) writeSamples(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("failed to write samples: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	var werr error
	t.mu.Lock()
	for i := range t.samples {
		if werr = enc.Encode(&t.samples[i]); werr != nil {
			break
		}
	}
	t.mu.Unlock()
	if werr == nil {
		werr = w.Flush()
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("failed to write samples: %w", werr)
	}
	return nil
}
