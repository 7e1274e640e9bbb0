package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"napilab/images/wire"
	"napilab/results"
	"napilab/scenarios"
)

// hangError is a step that missed its deadline.
type hangError struct {
	step     string
	line     int
	deadline time.Duration
}

func (e *hangError) Error() string {
	return fmt.Sprintf("hang: step %q (line %d) did not finish within %v", e.step, e.line, e.deadline)
}

// stepError is an action the guest refused.
type stepError struct {
	step string
	line int
	err  error
}

func (e *stepError) Error() string {
	return fmt.Sprintf("step %q (line %d) failed: %v", e.step, e.line, e.err)
}

func (e *stepError) Unwrap() error { return e.err }

// timeline runs a scenario's steps against the agent and records what
// happened: step times, samples and load statistics.
type timeline struct {
	s     *scenarios.Scenario
	ctl   *control
	host  *hostNet
	logf  func(string, ...any)
	start time.Time
	end   time.Time

	mu      sync.Mutex
	steps   []results.Step
	spans   []span // host-time extent of every step, for placing splats
	loads   map[string]*activeLoad
	stats   map[string]*loadResult
	samples []sampleRec
	rng     *rand.Rand // jitter, seeded from the scenario (guarded by mu)
}

type span struct {
	name       string
	start, end time.Time
}

// sampleRec is one snapshot taken for a sampler group.
type sampleRec struct {
	Group string      `json:"group"`
	Host  float64     `json:"host"` // seconds since the timeline began
	Data  wire.Sample `json:"sample"`
}

type activeLoad struct {
	load *scenarios.Load
	inj  *injector
}

type loadResult struct {
	sent, sendErrors uint64
	sink             *wire.LoadStats
	sender           *wire.LoadStats // guest senders only; an rr client's latency is here
}

func newTimeline(s *scenarios.Scenario, seed int64, ctl *control, host *hostNet, logf func(string, ...any)) *timeline {
	return &timeline{s: s, ctl: ctl, host: host, logf: logf, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e617069)),
		loads: map[string]*activeLoad{}, stats: map[string]*loadResult{}}
}

// jitter returns a random extra delay in [0, max).
func (t *timeline) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Duration(t.rng.Int64N(int64(max)))
}

func (t *timeline) elapsed() float64 {
	if t.end.IsZero() {
		return time.Since(t.start).Seconds()
	}
	return t.end.Sub(t.start).Seconds()
}

// run executes the timeline with the samplers running alongside.
func (t *timeline) run(ctx context.Context) error {
	t.start = time.Now()
	sctx, stopSamplers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	groups := t.samplerGroups()
	t.snapshot(ctx, metricsGroup, t.metricSources())
	for _, g := range groups {
		wg.Add(1)
		go func(g samplerGroup) {
			defer wg.Done()
			t.sampleLoop(sctx, g)
		}(g)
	}
	err := t.runSteps(ctx, t.s.Timeline)
	stopSamplers()
	wg.Wait()
	var hang *hangError
	if !errors.As(err, &hang) {
		// Stop what the timeline left running and take the final snapshot.
		for _, name := range t.running() {
			if serr := t.stopLoad(ctx, name); serr != nil && err == nil {
				err = serr
			}
		}
		t.snapshot(ctx, metricsGroup, t.metricSources())
	}
	// The guest may be stuck: host senders stop here whatever happened.
	t.mu.Lock()
	for _, a := range t.loads {
		if a.inj != nil {
			a.inj.stop()
		}
	}
	t.mu.Unlock()
	t.end = time.Now()
	return err
}

func (t *timeline) running() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for n := range t.loads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// metricsGroup names the snapshots taken before and after the timeline:
// every source the assertions' metrics need, read together.
const metricsGroup = "metrics"

func (t *timeline) metricSources() []string {
	srcs := []string{wire.SourceSoftirqs, wire.SourceSoftnet, wire.SourceInterrupts, wire.SourceSNMP,
		wire.PrefixTasks + "ksoftirqd/", wire.PrefixTasks + "napi/"}
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

func (t *timeline) snapshot(ctx context.Context, group string, sources []string) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var s wire.Sample
	if err := t.ctl.call(cctx, wire.OpSample, wire.SampleArgs{Sources: sources}, &s); err != nil {
		return
	}
	t.mu.Lock()
	t.samples = append(t.samples, sampleRec{Group: group, Host: time.Since(t.start).Seconds(), Data: s})
	t.mu.Unlock()
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

func stepName(st *scenarios.Step) string {
	if st.Name != "" {
		return st.Name
	}
	switch {
	case st.Write != nil:
		v := st.Write.Value
		if len(st.Write.Values) > 0 {
			v = strings.Join(st.Write.Values, "/")
		}
		return fmt.Sprintf("write %s > %s", v, st.Write.Path)
	case st.Link != nil:
		return fmt.Sprintf("link %s %s", st.Link.Dev, st.Link.State)
	case st.GRO != nil:
		return "gro " + st.GRO.Dev
	case st.Channels != nil:
		return "channels " + st.Channels.Dev
	case len(st.Start) > 0:
		return "start " + strings.Join(st.Start, ", ")
	case len(st.Stop) > 0:
		return "stop " + strings.Join(st.Stop, ", ")
	case st.Sleep > 0:
		return "sleep " + st.Sleep.D().String()
	case st.Parallel != nil:
		return "parallel"
	}
	return st.Action()
}

// steps_ runs steps in sequence; the first error stops the rest.
func (t *timeline) runSteps(ctx context.Context, steps []*scenarios.Step) error {
	for _, st := range steps {
		if err := t.step(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (t *timeline) step(ctx context.Context, st *scenarios.Step) error {
	name := stepName(st)
	begin := time.Now()
	rec := results.Step{Name: name, Line: st.Pos.Line, Start: begin.Sub(t.start).Seconds()}
	var err error
	if len(st.Parallel) > 0 {
		err = t.parallel(ctx, st.Parallel)
		rec.Iterations = 1
	} else {
		rec.Iterations, rec.Tolerated, err = t.repeat(ctx, st, name)
	}
	rec.Duration = time.Since(begin).Seconds()
	if err != nil {
		rec.Error = err.Error()
	}
	t.mu.Lock()
	t.steps = append(t.steps, rec)
	t.spans = append(t.spans, span{name: name, start: begin, end: time.Now()})
	t.mu.Unlock()
	t.logf("step %-40s %6.2fs  x%d %s", name, rec.Duration, rec.Iterations, rec.Error)
	return err
}

// parallel runs branches together; the first failure cancels the others.
func (t *timeline) parallel(ctx context.Context, steps []*scenarios.Step) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = t.step(pctx, st); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// Report the root cause, not the cancellations it caused.
	for _, e := range errs {
		var h *hangError
		if errors.As(e, &h) {
			return e
		}
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	return ctx.Err()
}

// repeat runs a step's action once, or every period for a duration/count.
func (t *timeline) repeat(ctx context.Context, st *scenarios.Step, name string) (n, tolerated int, err error) {
	n, err = t.repeatUntil(ctx, st, name, &tolerated)
	return n, tolerated, err
}

// tolerable says whether err is one of the step's tolerated errnos.
func tolerable(st *scenarios.Step, err error) bool {
	for _, name := range st.Tolerate {
		if e := scenarios.Errno(name); e != 0 && strings.Contains(err.Error(), e.Error()) {
			return true
		}
	}
	return false
}

func (t *timeline) repeatUntil(ctx context.Context, st *scenarios.Step, name string, tolerated *int) (int, error) {
	deadline := st.Deadline.D()
	if deadline == 0 {
		deadline = t.s.Defaults.Deadline.D()
	}
	if st.Wait != nil {
		// A wait that runs out of time fails; only one that cannot even
		// poll past its timeout is a hang.
		deadline += st.Wait.Timeout.D()
	}
	begin := time.Now()
	next := begin
	for i := 0; ; i++ {
		if st.Every > 0 && i > 0 {
			if st.For > 0 && time.Since(begin) >= st.For.D() || st.Count > 0 && i >= st.Count {
				return i, nil
			}
			next = next.Add(st.Every.D() + t.jitter(st.Jitter.D()))
			select {
			case <-ctx.Done():
				return i, ctx.Err()
			case <-time.After(time.Until(next)):
			}
		}
		actx, cancel := context.WithTimeout(ctx, deadline)
		err := t.action(actx, st, i)
		timedOut := actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		switch {
		case timedOut:
			return i + 1, &hangError{step: name, line: st.Pos.Line, deadline: deadline}
		case err != nil && ctx.Err() != nil:
			return i + 1, ctx.Err()
		case err != nil && tolerable(st, err):
			*tolerated++
		case err != nil:
			return i + 1, &stepError{step: name, line: st.Pos.Line, err: err}
		}
		if st.Every == 0 {
			return 1, nil
		}
	}
}

// action performs iteration i of a step's action.
func (t *timeline) action(ctx context.Context, st *scenarios.Step, i int) error {
	switch {
	case st.Write != nil:
		v := st.Write.Value
		if len(st.Write.Values) > 0 {
			v = st.Write.Values[i%len(st.Write.Values)]
		}
		return t.ctl.call(ctx, wire.OpWrite, wire.File{Path: st.Write.Path, Netns: st.Write.Netns, Value: v}, nil)
	case st.Link != nil:
		up := st.Link.State == "up" || st.Link.State == "toggle" && i%2 == 1
		return t.ctl.call(ctx, wire.OpLink, wire.Link{Dev: st.Link.Dev, Netns: st.Link.Netns, Up: up}, nil)
	case st.GRO != nil:
		on := i%2 == 1
		if st.GRO.On != nil {
			on = *st.GRO.On
		}
		return t.ctl.call(ctx, wire.OpFeature, wire.Feature{Dev: st.GRO.Dev, Netns: st.GRO.Netns, Feature: "rx-gro", On: on}, nil)
	case st.Channels != nil:
		n := st.Channels.Values[i%len(st.Channels.Values)]
		return t.ctl.call(ctx, wire.OpChannels, wire.Channels{Dev: st.Channels.Dev, Netns: st.Channels.Netns, Combined: n}, nil)
	case len(st.Start) > 0:
		for _, n := range st.Start {
			if err := t.startLoad(ctx, n); err != nil {
				return err
			}
		}
	case len(st.Stop) > 0:
		for _, n := range st.Stop {
			if err := t.stopLoad(ctx, n); err != nil {
				return err
			}
		}
	case st.Sleep > 0:
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return nil // a sleep longer than the deadline is not a hang
			}
			return ctx.Err()
		case <-time.After(st.Sleep.D()):
		}
	case st.Sysctl != nil:
		v := cycle(st.Sysctl.Value, st.Sysctl.Values, i)
		p := "/proc/sys/" + strings.ReplaceAll(st.Sysctl.Name, ".", "/")
		return t.ctl.call(ctx, wire.OpWrite, wire.File{Path: p, Netns: st.Sysctl.Netns, Value: v}, nil)
	case st.XDP != nil:
		on := i%2 == 0
		if st.XDP.On != nil {
			on = *st.XDP.On
		}
		return t.ctl.call(ctx, wire.OpXDP, wire.XDP{Dev: st.XDP.Dev, Netns: st.XDP.Netns, Attach: on, Mode: st.XDP.Mode}, nil)
	case st.RPS != nil:
		r := st.RPS
		for _, q := range queuesOr0(r.Queues) {
			dir := path.Join("/sys/class/net", r.Dev, "queues", "rx-"+strconv.Itoa(q))
			if len(r.CPUs) > 0 {
				if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_cpus", Netns: r.Netns, Value: r.CPUs[i%len(r.CPUs)]}, nil); err != nil {
					return err
				}
			}
			if r.FlowCnt != nil {
				if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_flow_cnt", Netns: r.Netns, Value: strconv.Itoa(*r.FlowCnt)}, nil); err != nil {
					return err
				}
			}
		}
	case st.XPS != nil:
		for _, q := range queuesOr0(st.XPS.Queues) {
			p := path.Join("/sys/class/net", st.XPS.Dev, "queues", "tx-"+strconv.Itoa(q), "xps_cpus")
			if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: p, Netns: st.XPS.Netns, Value: st.XPS.CPUs[i%len(st.XPS.CPUs)]}, nil); err != nil {
				return err
			}
		}
	case st.IRQ != nil:
		return t.ctl.call(ctx, wire.OpIRQ, wire.IRQAffinity{Match: st.IRQ.Match, CPUs: st.IRQ.CPUs}, nil)
	case st.Exec != nil:
		var res wire.ExecResult
		if err := t.ctl.call(ctx, wire.OpExec, wire.Exec{Netns: st.Exec.Netns, Argv: st.Exec.Argv}, &res); err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s exited %d: %s", st.Exec.Argv[0], res.ExitCode, lastLines(res.Output, 5))
		}
	case st.Wait != nil:
		return t.wait(ctx, st.Wait)
	}
	return nil
}

func cycle(one string, many []string, i int) string {
	if len(many) > 0 {
		return many[i%len(many)]
	}
	return one
}

func queuesOr0(q []int) []int {
	if len(q) == 0 {
		return []int{0}
	}
	return q
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// wait polls until the condition holds; running out of Timeout is an error.
func (t *timeline) wait(ctx context.Context, w *scenarios.Wait) error {
	timeout := w.Timeout.D()
	if timeout == 0 {
		timeout = t.s.Defaults.Deadline.D()
	}
	until := time.Now().Add(timeout)
	var last string
	for {
		ok, seen, err := t.holds(ctx, w)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = seen
		if time.Now().After(until) {
			return fmt.Errorf("condition not met within %v (last seen: %s)", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holds checks a wait condition once.
func (t *timeline) holds(ctx context.Context, w *scenarios.Wait) (bool, string, error) {
	if w.Path != "" {
		var v string
		if err := t.ctl.call(ctx, wire.OpRead, wire.File{Path: w.Path, Netns: w.Netns}, &v); err != nil {
			return false, "", err
		}
		v = strings.TrimSpace(v)
		return v == w.Equals, fmt.Sprintf("%s = %q", w.Path, v), nil
	}
	var s wire.Sample
	src := wire.PrefixThreads + w.Threads
	if err := t.ctl.call(ctx, wire.OpSample, wire.SampleArgs{Sources: []string{src}}, &s); err != nil {
		return false, "", err
	}
	n := countLines(s.Values[src])
	if w.Absent {
		return n == 0, fmt.Sprintf("%d %s* threads", n, w.Threads), nil
	}
	return n >= max(w.Min, 1), fmt.Sprintf("%d %s* threads", n, w.Threads), nil
}

func countLines(s string) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

func sinkName(load string) string { return load + ".sink" }
func sendName(load string) string { return load + ".send" }

func cpuOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// loadKinds maps a scenario load kind to the agent's receiver and sender kinds.
var loadKinds = map[string][2]string{
	"udp": {wire.LoadUDPSink, wire.LoadUDPSend},
	"tcp": {wire.LoadTCPSink, wire.LoadTCPSend},
	"rr":  {wire.LoadRRServer, wire.LoadRRClient},
}

// startLoad starts the receiver, then the sender (in the guest or on the host).
func (t *timeline) startLoad(ctx context.Context, name string) error {
	l := t.s.Loads[name]
	kinds := loadKinds[l.Kind]
	proto := l.Proto
	if l.Kind == "rr" && proto == "" {
		proto = "udp"
	}
	sink := wire.Load{Name: sinkName(name), Kind: kinds[0], Netns: l.SinkNetns, Addr: l.SinkAddr,
		Port: l.To.Port, Size: l.Size, CPU: cpuOr(l.SinkCPU), BusyPoll: l.BusyPoll, Proto: proto}
	if err := t.ctl.call(ctx, wire.OpStart, sink, nil); err != nil {
		return fmt.Errorf("start receiver of %s: %w", name, err)
	}
	a := &activeLoad{load: l}
	if l.From.Host {
		inj, err := startInjector(t.host, &net.UDPAddr{IP: net.ParseIP(l.SinkAddr), Port: l.To.Port}, l.Flows, l.Size, l.Rate)
		if err != nil {
			return fmt.Errorf("start host sender of %s: %w", name, err)
		}
		a.inj = inj
	} else {
		send := wire.Load{Name: sendName(name), Kind: kinds[1], Netns: l.From.Netns, Addr: l.SinkAddr,
			Port: l.To.Port, Flows: l.Flows, Size: l.Size, Rate: l.Rate, CPU: cpuOr(l.CPU), Proto: proto}
		if err := t.ctl.call(ctx, wire.OpStart, send, nil); err != nil {
			return fmt.Errorf("start sender of %s: %w", name, err)
		}
	}
	t.mu.Lock()
	t.loads[name] = a
	t.mu.Unlock()
	return nil
}

// stopLoad stops the sender, lets in-flight packets land, then stops the sink.
func (t *timeline) stopLoad(ctx context.Context, name string) error {
	t.mu.Lock()
	a, ok := t.loads[name]
	delete(t.loads, name)
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("load %s is not running", name)
	}
	res := &loadResult{}
	if a.inj != nil {
		res.sent, res.sendErrors = a.inj.stop()
	} else {
		var st wire.LoadStats
		if err := t.ctl.call(ctx, wire.OpStop, wire.LoadName{Name: sendName(name)}, &st); err != nil {
			return fmt.Errorf("stop sender of %s: %w", name, err)
		}
		res.sent, res.sendErrors, res.sender = st.Packets, st.Errors, &st
	}
	time.Sleep(200 * time.Millisecond)
	var sink wire.LoadStats
	if err := t.ctl.call(ctx, wire.OpStop, wire.LoadName{Name: sinkName(name)}, &sink); err != nil {
		return fmt.Errorf("stop sink of %s: %w", name, err)
	}
	res.sink = &sink
	t.mu.Lock()
	t.stats[name] = res
	t.mu.Unlock()
	return nil
}
