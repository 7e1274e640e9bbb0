package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/model"
	"napilab/runner/vm"
	"napilab/scenarios"
)

// hangError is a step (or a setup call) that missed its deadline; facts
// say what the lab saw then, and judgeHang whose fault it is.
type hangError struct {
	step     string
	line     int
	deadline time.Duration
	facts    hangFacts
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
	host  *vm.HostNet
	logf  func(string, ...any)
	start time.Time
	end   time.Time

	mu      sync.Mutex
	steps   []results.Step
	spans   []span // host-time extent of every step, for placing splats
	loads   map[string]*activeLoad
	stats   map[string]*loadResult
	samples []sampleRec
	iters   map[*scenarios.Step][]iteration // each repetition's start and value
	edges   edgePlan                        // snapshots windowed assertions need
	final   float64                         // host time of the snapshot after the timeline, 0 if none
	rng     *rand.Rand                      // jitter, seeded from the scenario (guarded by mu)

	ks       kselftestRun
	outDir   string                       // the run folder: kselftests/<test>.log, exec/<line>-<run>.log
	slow     bool                         // an emulated CPU (TCG): tests may relax timing
	noPolls  bool                         // no who-polled sampling unless an assertion needs it
	covered  bool                         // the cover probes count the series' functions
	kernel   model.Kernel                 // the guest's release, for the rules that depend on it
	execLogs map[*scenarios.Step]*execLog // exec steps' outputs, guarded by mu
	cpu      func() (vm.CPUUse, error)    // QEMU's CPU use so far (Guest.cpuUse); nil = not measured

	sampleBytes int64  // the samples' size kept so far, guarded by mu
	samplesCut  string // why samples stopped being kept, "" = all kept; guarded by mu
}

// kselftestRun is what a timeline's kselftest steps are given and record.
type kselftestRun struct {
	timeouts map[string]time.Duration                     // per-test timeout by collection
	retries  int                                          // attempts after a failed test's first
	known    []knownFlaky                                 // known-flaky.yaml
	spec     string                                       // the kernel's spec name, for known
	strict   bool                                         // flaky tests count as failures
	hook     func(name string, attempt int, x *wire.Exec) // tests: change an attempt's command
	results  []results.Kselftest                          // guarded by the timeline's mu
}

// iteration is one repetition of a step's action, in seconds since the
// timeline began.
type iteration struct {
	start  float64 // the action was issued
	done   float64 // it returned: what it set holds from here
	until  float64 // the next repetition is due (the end of this one's span)
	value  string  // what it set (scenarios.Step.Value)
	failed bool    // the action returned an error: what it set is unknown
	// from and to are the host times of the edge snapshots an each:
	// assertion measures between (-1: not taken).
	from, to float64
}

type span struct {
	name       string
	start, end time.Time
}

// sampleRec is one snapshot taken for a sampler group.
type sampleRec struct {
	Group string      `json:"group"`
	Sent  float64     `json:"sent,omitempty"` // the request's host time, seconds since the timeline began
	Host  float64     `json:"host"`           // the reply's
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
	// sending is a host sender's packets per bucket from sendingFrom
	// (seconds since the timeline began); a guest sender's are its Buckets.
	sending     []uint64
	sendingFrom float64
}

func newTimeline(s *scenarios.Scenario, seed int64, ctl *control, host *vm.HostNet, logf func(string, ...any)) *timeline {
	return &timeline{s: s, ctl: ctl, host: host, logf: logf, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e617069)),
		loads: map[string]*activeLoad{}, stats: map[string]*loadResult{}, iters: map[*scenarios.Step][]iteration{},
		edges: edgePlan{byStep: planEdges(s)}, ks: kselftestRun{known: shippedKnownFlaky}}
}

// vm.CPUUse reads QEMU's CPU use, or fails when the guest cannot say.
func (t *timeline) cpuUse() (vm.CPUUse, error) {
	if t.cpu == nil {
		return vm.CPUUse{}, vm.ErrNoCPUUse
	}
	return t.cpu()
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
	ectx, stopEdges := context.WithCancel(ctx)
	t.edges.ctx = ectx
	err := t.runSteps(ctx, t.s.Timeline)
	stopEdges()
	t.edges.wg.Wait()
	stopSamplers()
	wg.Wait()
	var hang *hangError
	if !errors.As(err, &hang) {
		// Stop what the timeline left running and take the final
		// snapshot, each under its own deadline: after a failed step or
		// an interrupt the guest may not answer.
		for _, name := range t.running() {
			cctx, cancel := cleanupCtx(ctx, cleanupTimeout)
			serr := t.stopLoad(cctx, name)
			cancel()
			if serr != nil && err == nil {
				err = serr
			}
		}
		// The final snapshot is a measurement: a slow (debug, starved)
		// guest gets three step deadlines for it, as for the setup.
		cctx, cancel := cleanupCtx(ctx, max(cleanupTimeout, 3*t.s.Defaults.Deadline.D()))
		t.final = t.snapshot(cctx, metricsGroup, t.metricSources())
		if t.final >= 0 {
			t.settle(cctx)
		}
		cancel()
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
	name := st.Label()
	t.stepStarts(ctx, name)
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
	rec.Outputs = t.execOutputs(st) // exec steps' outputs, nil for others
	if err != nil {
		rec.Error = err.Error()
	}
	t.mu.Lock()
	t.steps = append(t.steps, rec)
	t.spans = append(t.spans, span{name: name, start: begin, end: time.Now()})
	t.mu.Unlock()
	t.stepEnded(ctx, name)
	t.logf("step %-40s %6.2fs  x%d %s", name, rec.Duration, rec.Iterations, rec.Error)
	return err
}

// parallel runs branches together; the first failure cancels the others,
// but a guest call in flight keeps its deadline (control.call): a branch
// stuck past it is a hang whichever branch failed first.
func (t *timeline) parallel(ctx context.Context, steps []*scenarios.Step) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, st := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = t.step(pctx, st); errs[i] != nil {
				cancel(errSiblingFailed)
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
		if e := scenarios.Errno(name); e != 0 && (errors.Is(err, e) || strings.Contains(err.Error(), e.Error())) {
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
	if len(st.Kselftest) > 0 && st.Deadline == 0 {
		// The kselftest runner kills a test at its timeout; only a guest
		// that cannot even report that is hung.
		deadline = 0
		for _, name := range st.Kselftest {
			deadline += t.kselftestBudget(name)
		}
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
		iterStart := time.Now()
		use0, use0Err := t.cpuUse()
		actx, cancel := context.WithTimeout(ctx, deadline)
		if st.Sleep > 0 {
			// A sleep cannot hang: the deadline does not apply to it.
			actx, cancel = context.WithCancel(ctx)
		}
		err := t.action(actx, st, i)
		// A guest call a sibling's failure did not end misses its deadline
		// with context.DeadlineExceeded while ctx is canceled.
		timedOut := actx.Err() == context.DeadlineExceeded && ctx.Err() == nil ||
			errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(ctx), errSiblingFailed)
		cancel()
		t.iterated(ctx, st, i, iterStart, next.Add(st.Every.D()), timedOut, err != nil)
		switch {
		case timedOut:
			share := measureShare(t.cpu, use0, use0Err == nil, iterStart, t.s.Machine.CPUs)
			return i + 1, &hangError{step: name, line: st.Pos.Line, deadline: deadline, facts: hangFacts{share: share}}
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
