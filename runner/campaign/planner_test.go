package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// openPlan is the plan of the shipped scenarios named, each without parameters.
func openPlan(t *testing.T, names ...string) []Planned {
	t.Helper()
	var plan []Planned
	for _, n := range names {
		s, err := scenarios.Open("../../scenarios/"+n, nil)
		if err != nil {
			t.Fatal(err)
		}
		plan = append(plan, Planned{Scenario: s, Params: map[string]string{}})
	}
	return plan
}

// TestPlannerFailedBuild checks that a kernel whose build fails is an ERROR
// for each of its scenarios, perf ones included, and that the next kernel
// still gets its runs (and its perf run, kept for after the others).
func TestPlannerFailedBuild(t *testing.T) {
	plan := openPlan(t, "napi-disable-race.yaml", "perf/udp-flood.yaml")
	broken := errors.New("kernel broken-6.1: make bzImage failed with exit code 2: net/core/dev.c:1: error: boom")
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		if kpath == "kernels/broken-6.1.yaml" {
			return runner.Config{}, broken
		}
		return runner.Config{Kernel: results.Kernel{Spec: "stock-6.1", Release: "6.1.192"}}, nil
	}
	var out bytes.Buffer
	pl := &Planner{Config: config, Options: &RunOptions{Out: t.TempDir(), Repeat: 1}, Groups: [][]Planned{plan}, K: 1, N: 1,
		Parallel: 1, Out: &out, Log: &out, Worst: results.Pass}
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
			for _, j := range pl.Pass(context.Background(), 0, tc.kpath) {
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
			if len(pl.perf) != tc.perf || pl.Worst != tc.worst {
				t.Errorf("%d perf runs, worst %s; want %d, %s", len(pl.perf), pl.Worst, tc.perf, tc.worst)
			}
		})
	}
}

func TestGroupPlan(t *testing.T) {
	plan := func(names ...string) []Planned {
		var out []Planned
		for _, n := range names {
			out = append(out, Planned{Scenario: &scenarios.Scenario{Name: n}})
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
		plan []Planned
		want [][]string
	}{
		{"plain first", plan("a.debian", "b", "c.debug", "d", "e.debian"), [][]string{{"b", "d"}, {"a.debian", "e.debian"}, {"c.debug"}}},
		{"no plain", plan("a.debug", "b.debug"), [][]string{{"a.debug", "b.debug"}}},
		{"only plain", plan("a", "b"), [][]string{{"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, g := range GroupPlan(tc.plan, key) {
				var names []string
				for _, p := range g {
					names = append(names, p.Scenario.Name)
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
	plan := openPlan(t, "kselftest-under-toggle.yaml", "napi-disable-race.yaml")
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
	gs := NewGuests("", 0, io.Discard, nil)
	pl := &Planner{Config: config, Options: &RunOptions{Out: t.TempDir(), Repeat: 1}, Groups: GroupPlan(plan, gs.GuestKey),
		K: 1, N: 1, Parallel: 1, Out: io.Discard, Log: io.Discard, Worst: results.Pass}
	var ran []string
	runStream(ctx, []string{"kernels/a.yaml", "kernels/b.yaml"}, len(pl.Groups), false, pl.Pass, runner.StreamOptions{Parallel: 1, Run: run,
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
	s, err := scenarios.Open("../../scenarios/kselftest-under-toggle.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		built++
		return runner.Config{Kernel: results.Kernel{Spec: "stock-6.1", Release: "6.1.192", Flavour: "debug"}}, nil
	}
	var out bytes.Buffer
	pl := &Planner{Config: config, Options: &RunOptions{Out: t.TempDir(), Repeat: 1, Flavour: "debug"},
		Groups: [][]Planned{{{Scenario: s, Params: map[string]string{}}}}, K: 1, N: 1, Parallel: 1, Out: &out, Log: &out, Worst: results.Pass}
	if jobs := pl.Pass(context.Background(), 0, "kernels/stock-6.1.yaml"); len(jobs) != 0 || built != 0 ||
		!strings.HasPrefix(out.String(), "SKIP  kselftest-under-toggle on kernels/stock-6.1.yaml (debug flavour): not on the debug flavour:") {
		t.Errorf("%d jobs, %d guests built, printed %q", len(jobs), built, out.String())
	}
}

// TestPlannerShards: with --repeat 6 in shard 2 of 3 a kernel gets the
// runs runner.Shard gives that shard, each in a run folder of its own under
// Out; the perf runs of the shard are every third from the second; the
// folders of runs --until-fail never started are gone after RunAll, those
// that ran stay.
func TestPlannerShards(t *testing.T) {
	s, err := scenarios.Open("../../scenarios/napi-disable-race.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	config := func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
		return runner.Config{Kernel: results.Kernel{Spec: "stock-6.1", Release: "6.1.192"}}, nil
	}
	out := t.TempDir()
	var log bytes.Buffer
	o := &RunOptions{Kernels: []string{"kernels/stock-6.1.yaml"}, Out: out, Repeat: 6, UntilFail: true}
	pl := &Planner{Config: config, Options: o, Groups: [][]Planned{{{Scenario: s, Params: map[string]string{"x": "a/b"}}}},
		K: 2, N: 3, Parallel: 1, Out: &log, Log: &log, Worst: results.Pass}
	var all []runner.Job
	for i := 1; i <= 6; i++ {
		all = append(all, runner.Job{Name: fmt.Sprintf("napi-disable-race@stock-6.1-x=a_b#%d", i)})
	}
	var want []string
	for _, j := range runner.Shard(all, 2, 3) {
		want = append(want, j.Name)
	}
	jobs := pl.Pass(context.Background(), 0, "kernels/stock-6.1.yaml")
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
		if filepath.Dir(j.Cfg.OutDir) != out || !strings.Contains(filepath.Base(j.Cfg.OutDir), "napi-disable-race") {
			t.Errorf("job %s: run folder %q, want one under %s", j.Name, j.Cfg.OutDir, out)
		}
		if j.Group != "napi-disable-race@stock-6.1-x=a_b" {
			t.Errorf("job %s: group %q", j.Name, j.Group)
		}
	}
	if len(want) < 2 || !slices.Equal(names, want) {
		t.Fatalf("jobs %q, want shard 2/3 %q", names, want)
	}

	pl.perf = []PerfJob{{KPath: "p0"}, {KPath: "p1"}, {KPath: "p2"}, {KPath: "p3"}, {KPath: "p4"}}
	var perf []string
	for _, j := range pl.PerfJobs() {
		perf = append(perf, j.KPath)
	}
	if want := []string{"p1", "p4"}; !slices.Equal(perf, want) {
		t.Errorf("perf jobs of shard 2/3: %q, want %q", perf, want)
	}

	// RunAll plans again, in a fresh folder: the first run FAILs, --until-fail starts no other.
	out = t.TempDir()
	o.Out, pl.perf, pl.dirs = out, nil, nil
	runs := 0
	pl.Run = func(ctx context.Context, cfg runner.Config) *results.Result {
		runs++
		return &results.Result{Verdict: results.Fail}
	}
	var ran []runner.Job
	worst, groups := pl.RunAll(context.Background(), func(j runner.Job, r *results.Result) { ran = append(ran, j) })
	if runs != 1 || len(ran) != 1 || worst != results.Fail || len(groups[ran[0].Group]) != 1 {
		t.Fatalf("%d runs, %d told, worst %s, groups %v; want the one FAIL", runs, len(ran), worst, groups)
	}
	left, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || filepath.Join(out, left[0].Name()) != ran[0].Cfg.OutDir {
		t.Errorf("folders left %v, want only %s", left, ran[0].Cfg.OutDir)
	}
}
