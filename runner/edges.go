package runner

import (
	"context"
	"sync"
	"time"

	"napilab/scenarios"
)

// Windowed assertions are measured between snapshots taken at their
// windows' edges: the timeline takes them itself when a step starts or ends,
// a fixed time after a step starts (a skip:) or ends, and around every
// repetition of an each: step, so a window never depends on when a free-running sampler happened
// to read.

// edgesGroup names the snapshots taken at window edges.
const edgesGroup = "edges"

// stepEdges says which snapshots a named step needs.
type stepEdges struct {
	start, end bool
	afterStart []time.Duration // after the step's start (a during: window's skip:)
	after      []time.Duration // after the step's end
	within     time.Duration   // each: after every repetition (0: not watched)
}

// planEdges derives the edge snapshots from the windowed assertions.
func planEdges(s *scenarios.Scenario) map[string]*stepEdges {
	out := map[string]*stepEdges{}
	get := func(name string) *stepEdges {
		if out[name] == nil {
			out[name] = &stepEdges{}
		}
		return out[name]
	}
	for _, a := range s.Asserts {
		switch w := a.During; {
		case a.Each != "":
			e := get(a.Each)
			if e.within == 0 || a.Within.D() < e.within {
				e.within = a.Within.D()
			}
		case w == nil:
		case w.Step != "":
			get(w.Step).start = true
			get(w.Step).end = true
			get(w.Step).skip(w.Skip.D())
		case w.After != "":
			e := get(w.After)
			e.after = append(e.after, w.Skip.D(), w.For.D())
		default:
			get(w.From).start = true
			get(w.From).skip(w.Skip.D())
			get(w.To).end = true
		}
	}
	return out
}

// skip plans a snapshot d after the step's start, where a window that skips
// its first d begins.
func (e *stepEdges) skip(d time.Duration) {
	if d > 0 {
		e.afterStart = append(e.afterStart, d)
	}
}

// edgePlan is the snapshots a timeline's windowed assertions need: by step
// name, and the context and wait group of those scheduled after a step.
type edgePlan struct {
	byStep map[string]*stepEdges
	ctx    context.Context // ends the snapshots scheduled after steps
	wg     sync.WaitGroup
}

// edge takes one snapshot of the window sources and returns its host time
// (-1: none).
func (t *timeline) edge(ctx context.Context) float64 {
	if len(t.edges.byStep) == 0 {
		return -1
	}
	return t.snapshot(ctx, edgesGroup, t.windowSources())
}

// stepStarts snapshots before a step whose start is an edge and schedules
// the snapshots after its start.
func (t *timeline) stepStarts(ctx context.Context, name string) {
	e := t.edges.byStep[name]
	if e == nil {
		return
	}
	if e.start {
		t.edge(ctx)
	}
	t.edgesAfter(e.afterStart)
}

// stepEnded snapshots at a step's end and schedules the snapshots after it;
// those stop with the timeline (the window then ends past it, unmeasured).
func (t *timeline) stepEnded(ctx context.Context, name string) {
	e := t.edges.byStep[name]
	if e == nil {
		return
	}
	if e.end || len(e.after) > 0 {
		t.edge(ctx)
	}
	t.edgesAfter(e.after)
}

// edgesAfter schedules a snapshot after each of delays from now; those stop
// with the timeline.
func (t *timeline) edgesAfter(delays []time.Duration) {
	for _, d := range delays {
		if d <= 0 {
			continue
		}
		t.edges.wg.Add(1)
		go func() {
			defer t.edges.wg.Done()
			select {
			case <-t.edges.ctx.Done():
			case <-time.After(d):
				t.edge(t.edges.ctx)
			}
		}()
	}
}

// iterated records a repetition (failed: the action returned an error);
// for a step an each: assertion watches, it
// snapshots when the action returned and again when the assertion's window
// after that snapshot ends, or just before the next repetition is due,
// whichever comes first: watching never stretches the step's period.
func (t *timeline) iterated(ctx context.Context, st *scenarios.Step, i int, start, due time.Time, timedOut, failed bool) {
	rel := func(at time.Time) float64 { return at.Sub(t.start).Seconds() }
	it := iteration{start: rel(start), done: rel(time.Now()), until: rel(due), value: st.Value(i), from: -1, to: -1, failed: failed || timedOut}
	within := t.watched(st)
	if within > 0 && !timedOut {
		it.from = t.edge(ctx)
		end := time.Now().Add(within)
		if st.Every > 0 && due.Before(end) {
			end = due.Add(-time.Millisecond)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(end)):
			it.to = t.edge(ctx)
		}
	}
	t.mu.Lock()
	t.iters[st] = append(t.iters[st], it)
	t.mu.Unlock()
}

// watched returns the each: window after every repetition of st, 0 if none.
func (t *timeline) watched(st *scenarios.Step) time.Duration {
	if e := t.edges.byStep[st.Name]; st.Name != "" && e != nil {
		return e.within
	}
	return 0
}
