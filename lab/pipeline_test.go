package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
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

// TestPlannerFailedBuild checks that a kernel whose build fails is an ERROR
// for each of its scenarios, perf ones included, and that the next kernel
// still gets its runs (and its perf run, kept for after the others).
func TestPlannerFailedBuild(t *testing.T) {
	var plan []planned
	for _, f := range []string{"../scenarios/napi-disable-race.yaml", "../scenarios/perf/udp-flood.yaml"} {
		s, err := scenarios.Open(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		plan = append(plan, planned{s: s, params: map[string]string{}})
	}
	broken := errors.New("kernel broken-6.1: make bzImage failed with exit code 2: net/core/dev.c:1: error: boom")
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		if kpath == "kernels/broken-6.1.yaml" {
			return runner.Config{}, broken
		}
		return runner.Config{Kernel: results.Kernel{Spec: "stock-6.1", Release: "6.1.192"}}, nil
	}
	var out bytes.Buffer
	pl := &planner{config: config, o: &runOptions{out: t.TempDir(), repeat: 1}, groups: [][]planned{plan}, k: 1, n: 1,
		parallel: 1, out: &out, log: &out, worst: results.Pass}
	for _, tc := range []struct {
		kpath string
		jobs  []string
		lines []string // lines out gets
		perf  int      // perf runs kept so far
		worst results.Verdict
	}{
		{kpath: "kernels/broken-6.1.yaml", worst: results.Error, lines: []string{
			"ERROR  napi-disable-race on kernels/broken-6.1.yaml: " + broken.Error(),
			"ERROR  udp-flood on kernels/broken-6.1.yaml: " + broken.Error()}},
		{kpath: "kernels/stock-6.1.yaml", jobs: []string{"napi-disable-race@stock-6.1"}, perf: 1, worst: results.Error},
	} {
		t.Run(filepath.Base(tc.kpath), func(t *testing.T) {
			out.Reset()
			var names []string
			for _, j := range pl.pass(context.Background(), 0, tc.kpath) {
				names = append(names, j.Name)
				if j.Cfg.OutDir == "" {
					t.Errorf("job %s has no run folder", j.Name)
				}
			}
			if !slices.Equal(names, tc.jobs) {
				t.Errorf("jobs %q, want %q", names, tc.jobs)
			}
			var lines []string
			if got := strings.TrimSpace(out.String()); got != "" {
				lines = strings.Split(got, "\n")
			}
			if !slices.Equal(lines, tc.lines) {
				t.Errorf("printed %q, want %q", lines, tc.lines)
			}
			if len(pl.perf) != tc.perf || pl.worst != tc.worst {
				t.Errorf("%d perf runs, worst %s; want %d, %s", len(pl.perf), pl.worst, tc.perf, tc.worst)
			}
		})
	}
}

func TestGroupPlan(t *testing.T) {
	plan := func(names ...string) []planned {
		var out []planned
		for _, n := range names {
			out = append(out, planned{s: &scenarios.Scenario{Name: n}})
		}
		return out
	}
	// A scenario's guest is the part of its name after the dot: "" plain.
	key := func(s *scenarios.Scenario) string {
		_, k, _ := strings.Cut(s.Name, ".")
		return k
	}
	for _, tc := range []struct {
		name string
		plan []planned
		want [][]string
	}{
		{"plain first", plan("a.debian", "b", "c.debug", "d", "e.debian"), [][]string{{"b", "d"}, {"a.debian", "e.debian"}, {"c.debug"}}},
		{"no plain", plan("a.debug", "b.debug"), [][]string{{"a.debug", "b.debug"}}},
		{"only plain", plan("a", "b"), [][]string{{"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, g := range groupPlan(tc.plan, key) {
				var names []string
				for _, p := range g {
					names = append(names, p.s.Name)
				}
				got = append(got, names)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("groups %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlainRunsBesideFlavourBuild proves that the plain runs start before
// the guest of the Debian scenario (the kselftest flavour, the image) is
// built: that build does not finish until a plain run started. It also
// checks the passes: every kernel's plain guest before any Debian one.
func TestPlainRunsBesideFlavourBuild(t *testing.T) {
	ctx := guard(t)
	var plan []planned
	for _, f := range []string{"../scenarios/kselftest-under-toggle.yaml", "../scenarios/napi-disable-race.yaml"} {
		s, err := scenarios.Open(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		plan = append(plan, planned{s: s, params: map[string]string{}})
	}
	plainRunning := make(chan struct{})
	var once sync.Once
	var built []string // the builder goroutine's until runStream returns
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		spec := strings.TrimSuffix(filepath.Base(kpath), ".yaml")
		if s.NeedsDebian() {
			wait(ctx, plainRunning)
		}
		built = append(built, spec+" "+s.Name)
		return runner.Config{Kernel: results.Kernel{Spec: spec, Release: "6.1.192"}}, nil
	}
	run := func(ctx context.Context, cfg runner.Config) *results.Result {
		if !cfg.Scenario.NeedsDebian() {
			once.Do(func() { close(plainRunning) })
		}
		return &results.Result{Verdict: results.Pass}
	}
	gs := newGuests(&globalOptions{}, 0, io.Discard)
	pl := &planner{config: config, o: &runOptions{out: t.TempDir(), repeat: 1}, groups: groupPlan(plan, gs.guestKey),
		k: 1, n: 1, parallel: 1, out: io.Discard, log: io.Discard, worst: results.Pass}
	var ran []string
	runStream(ctx, []string{"kernels/a.yaml", "kernels/b.yaml"}, len(pl.groups), false, pl.pass, runner.StreamOptions{Parallel: 1, Run: run,
		Each: func(j runner.Job, _ *results.Result) { ran = append(ran, j.Name) }})
	if ctx.Err() != nil {
		t.Fatal("the Debian guest's build waited for a plain run that never came")
	}
	if want := []string{"a napi-disable-race", "b napi-disable-race", "a kselftest-under-toggle", "b kselftest-under-toggle"}; !slices.Equal(built, want) {
		t.Errorf("built %q, want %q", built, want)
	}
	if want := []string{"napi-disable-race@a", "napi-disable-race@b", "kselftest-under-toggle@a", "kselftest-under-toggle@b"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
}

// TestSkippedFlavourNotBuilt: a scenario whose flavours: debug: skips it is
// a SKIP under --flavour debug before its guest is built (the kselftest
// flavour of a debug kernel is a cold build of 20-25 min).
func TestSkippedFlavourNotBuilt(t *testing.T) {
	s, err := scenarios.Open("../scenarios/kselftest-under-toggle.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		built++
		return runner.Config{Kernel: results.Kernel{Spec: "stock-6.1", Release: "6.1.192", Flavour: "debug"}}, nil
	}
	var out bytes.Buffer
	pl := &planner{config: config, o: &runOptions{out: t.TempDir(), repeat: 1, flavour: "debug"},
		groups: [][]planned{{{s: s, params: map[string]string{}}}}, k: 1, n: 1, parallel: 1, out: &out, log: &out, worst: results.Pass}
	if jobs := pl.pass(context.Background(), 0, "kernels/stock-6.1.yaml"); len(jobs) != 0 || built != 0 ||
		!strings.HasPrefix(out.String(), "SKIP  kselftest-under-toggle on kernels/stock-6.1.yaml (debug flavour): not on the debug flavour:") {
		t.Errorf("%d jobs, %d guests built, printed %q", len(jobs), built, out.String())
	}
}
