package campaign

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"napilab/results"
	"napilab/runner"
)

// events is the order in which the fake builds and runs of a stream
// happened: "build k1", "built k1", "run s@k1", "ran s@k1", ...
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(f string, a ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(f, a...))
}

// at is where ev happened, -1 when it did not.
func (e *events) at(ev string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Index(e.list, ev)
}

// fakeStream is a stream over kernels whose builds and runs are fakes
// recording events. A kernel kN's build gives one job, s@kN. hooks run
// inside a build ("build k2") or a run ("run s@k1") and may block there.
type fakeStream struct {
	ev    events
	hooks map[string]func(ctx context.Context)
	// verdicts are the runs' verdicts by job name; PASS if missing.
	verdicts map[string]results.Verdict
	// reported are closed once the job of that name is reported.
	reported map[string]chan struct{}
}

func (f *fakeStream) hook(ctx context.Context, name string) {
	f.ev.add("%s", name)
	if h := f.hooks[name]; h != nil {
		h(ctx)
	}
}

func (f *fakeStream) plan(ctx context.Context, _ int, kpath string) []runner.Job {
	f.hook(ctx, "build "+kpath)
	if ctx.Err() != nil {
		f.ev.add("stopped %s", kpath)
		return nil
	}
	f.ev.add("built %s", kpath)
	return []runner.Job{{Name: "s@" + kpath, Cfg: runner.Config{Kernel: results.Kernel{Spec: kpath}}}}
}

func (f *fakeStream) run(ctx context.Context, cfg runner.Config) *results.Result {
	name := "s@" + cfg.Kernel.Spec
	f.hook(ctx, "run "+name)
	f.ev.add("ran %s", name)
	v, ok := f.verdicts[name]
	if !ok {
		v = results.Pass
	}
	return &results.Result{Scenario: name, Verdict: v}
}

// stream runs the stream over k1, k2 and k3, one guest at a time, and
// returns the jobs reported, in order.
func (f *fakeStream) stream(ctx context.Context, buildFirst, untilFail bool) []string {
	var ran []string
	each := func(j runner.Job, r *results.Result) {
		ran = append(ran, j.Name)
		if ch := f.reported[j.Name]; ch != nil {
			close(ch)
		}
	}
	runStream(ctx, []string{"k1", "k2", "k3"}, 1, buildFirst, f.plan,
		runner.StreamOptions{Parallel: 1, UntilFail: untilFail, Run: f.run, Each: each})
	return ran
}

// guard ends ctx a little before the test's deadline, so that a stream that
// does not overlap fails with its events instead of hanging: no timing
// assertion, only a bound on a deadlock.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-10*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}

// wait blocks until ch is closed or ctx ends.
func wait(ctx context.Context, ch <-chan struct{}) {
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// TestStreamRunsBesideBuilds proves the overlap: kernel k2's build does not
// finish until k1's run has started, and k1's run does not finish until
// k2's build has started. Without streaming (every build first) this
// deadlocks, and the guard ends it.
func TestStreamRunsBesideBuilds(t *testing.T) {
	ctx := guard(t)
	k1Running, k2Building := make(chan struct{}), make(chan struct{})
	f := &fakeStream{hooks: map[string]func(context.Context){
		"build k2": func(ctx context.Context) { close(k2Building); wait(ctx, k1Running) },
		"run s@k1": func(ctx context.Context) { close(k1Running); wait(ctx, k2Building) },
	}}
	ran := f.stream(ctx, false, false)
	if ctx.Err() != nil {
		t.Fatalf("no run beside a build: events %q", f.ev.list)
	}
	if want := []string{"s@k1", "s@k2", "s@k3"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q (events %q)", ran, want, f.ev.list)
	}
	checkOrder(t, &f.ev)
}

// checkOrder checks that the kernels built in order and that no run came
// before its kernel was built.
func checkOrder(t *testing.T, ev *events) {
	t.Helper()
	last := -1
	for _, k := range []string{"k1", "k2", "k3"} {
		if b := ev.at("build " + k); b >= 0 {
			if b < last {
				t.Errorf("%s built out of order: events %q", k, ev.list)
			}
			last = b
		}
		if run := ev.at("run s@" + k); run >= 0 && run < ev.at("built "+k) {
			t.Errorf("run of %s before its build: events %q", k, ev.list)
		}
	}
}

// TestStreamOrder checks the order of builds and runs: a kernel's runs
// follow its build, with --build-first every build precedes every run, and
// a FAIL with --until-fail or a cancel stops the build under way and no
// later kernel builds.
func TestStreamOrder(t *testing.T) {
	stoppedK2 := func(t *testing.T, ev *events) {
		if ev.at("stopped k2") < 0 || ev.at("build k3") >= 0 {
			t.Errorf("the build of k2 was not stopped, or k3 built: events %q", ev.list)
		}
	}
	for _, tc := range []struct {
		name       string
		buildFirst bool
		untilFail  bool
		verdicts   map[string]results.Verdict
		// hooks get the stream's cancel and the channel closed once s@k1 is reported.
		hooks func(cancel func(), k1Reported <-chan struct{}) map[string]func(context.Context)
		ran   []string
		check func(t *testing.T, ev *events)
	}{
		{name: "streaming", ran: []string{"s@k1", "s@k2", "s@k3"}},
		{name: "build first", buildFirst: true, ran: []string{"s@k1", "s@k2", "s@k3"},
			check: func(t *testing.T, ev *events) {
				if ev.at("built k3") > ev.at("run s@k1") {
					t.Errorf("a run before the last build: events %q", ev.list)
				}
			}},
		{name: "until fail stops the build", untilFail: true, verdicts: map[string]results.Verdict{"s@k1": results.Fail},
			hooks: func(cancel func(), k1Reported <-chan struct{}) map[string]func(context.Context) {
				return map[string]func(context.Context){"build k2": func(ctx context.Context) { <-ctx.Done() }}
			},
			ran: []string{"s@k1"}, check: stoppedK2},
		{name: "a FAIL without until fail goes on", verdicts: map[string]results.Verdict{"s@k1": results.Fail},
			ran: []string{"s@k1", "s@k2", "s@k3"}},
		{name: "cancel stops the build", ran: []string{"s@k1"},
			hooks: func(cancel func(), k1Reported <-chan struct{}) map[string]func(context.Context) {
				return map[string]func(context.Context){"build k2": func(ctx context.Context) {
					wait(ctx, k1Reported) // k1's run is not cancelled too
					cancel()
					<-ctx.Done()
				}}
			},
			check: stoppedK2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(guard(t))
			defer cancel()
			k1Reported := make(chan struct{})
			f := &fakeStream{verdicts: tc.verdicts, reported: map[string]chan struct{}{"s@k1": k1Reported}}
			if tc.hooks != nil {
				f.hooks = tc.hooks(cancel, k1Reported)
			}
			ran := f.stream(ctx, tc.buildFirst, tc.untilFail)
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("ran %q, want %q (events %q)", ran, tc.ran, f.ev.list)
			}
			checkOrder(t, &f.ev)
			if tc.check != nil {
				tc.check(t, &f.ev)
			}
		})
	}
}
