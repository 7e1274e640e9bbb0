package kernels

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// otherSpec writes a second spec over fakeKbuildLab's tarball.
func otherSpec(t *testing.T, dir string) *Spec {
	t.Helper()
	writeFiles(t, dir, map[string]string{"other.yaml": "name: other\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [a.config]\n"})
	s, err := LoadSpec(filepath.Join(dir, "other.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buildResult is one Build's outcome.
type buildResult struct {
	a   *Artifact
	err error
}

// buildAsync runs Build in a goroutine with progress going to onReport.
func buildAsync(spec *Spec, l layout, onReport func(Progress)) <-chan buildResult {
	out := make(chan buildResult, 1)
	go func() {
		a, err := Build(context.Background(), spec, Options{CacheDir: l.root, Jobs: 1, Progress: onReport})
		out <- buildResult{a, err}
	}()
	return out
}

// compileGate makes the first compile report of a build block until
// opened: the build then sits in its critical section, holding its lock.
type compileGate struct {
	entered chan struct{}
	open    chan struct{}
}

func newCompileGate() *compileGate {
	return &compileGate{entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *compileGate) report(p Progress) {
	if p.Phase == PhaseCompile && p.Objects == 0 && p.Line == "" {
		close(g.entered)
		<-g.open
	}
}

func TestTwoKeysBuildAtOnce(t *testing.T) {
	dir, base, l := fakeKbuildLab(t)
	other := otherSpec(t, dir)
	gate := newCompileGate()
	first := buildAsync(base, l, gate.report)
	<-gate.entered // base holds its key and compiles
	overlap, waited := make(chan struct{}), make(chan string, 1)
	second := buildAsync(other, l, func(p Progress) {
		switch {
		case p.Phase == PhaseWait:
			select {
			case waited <- p.Line:
			default:
			}
		case p.Phase == PhaseCompile && p.Objects == 0 && p.Line == "":
			close(overlap)
		}
	})
	select {
	case <-overlap: // other compiles while base still does
	case msg := <-waited:
		t.Fatalf("the build of other waited for base's: %s", msg)
	}
	close(gate.open)
	for _, ch := range []<-chan buildResult{first, second} {
		if r := <-ch; r.err != nil || r.a.Cached {
			t.Fatalf("Build = %+v, %v; want a fresh build", r.a, r.err)
		}
	}
}

func TestSameKeyWaitsThenHits(t *testing.T) {
	_, base, l := fakeKbuildLab(t)
	gate := newCompileGate()
	first := buildAsync(base, l, gate.report)
	<-gate.entered
	again, err := LoadSpec(base.Path)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan string, 1)
	second := buildAsync(again, l, func(p Progress) {
		if p.Phase == PhaseWait {
			select {
			case waited <- p.Line:
			default:
			}
		}
	})
	msg := <-waited
	want := fmt.Sprintf("waiting for base being built by pid %d since ", os.Getpid())
	if !strings.HasPrefix(msg, want) {
		t.Errorf("wait message %q, want it to start %q", msg, want)
	}
	close(gate.open)
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil {
		t.Fatalf("Build errors: %v, %v", r1.err, r2.err)
	}
	if r1.a.Cached || !r2.a.Cached || r1.a.Dir != r2.a.Dir {
		t.Errorf("first cached %v, second cached %v (%s vs %s); want one build, then a hit", r1.a.Cached, r2.a.Cached, r1.a.Dir, r2.a.Dir)
	}
	if notes, _ := filepath.Glob(filepath.Join(l.locksDir(), "*.holder")); len(notes) != 0 {
		t.Errorf("notes left after the builds: %q", notes)
	}
}

// writeNote writes a holder note beside the lock at path.
func writeNote(t *testing.T, path string, h holderNote) {
	t.Helper()
	if err := writeJSON(fmt.Sprintf("%s.%d-9.holder", path, h.Pid), h); err != nil {
		t.Fatal(err)
	}
}

func TestWaitMessage(t *testing.T) {
	me := os.Getpid()
	cases := []struct {
		name  string
		notes []holderNote
		want  string
	}{
		{"live holder", []holderNote{{Pid: me, ProcStart: procStart(me), Since: time.Now().Add(-192 * time.Second), Name: "stock-6.12", Doing: "being built"}},
			fmt.Sprintf("waiting for stock-6.12 being built by pid %d since 3m1", me)}, // 3m12s, or 3m13s on a slow run
		{"holder gone", []holderNote{{Pid: -1, Since: time.Now(), Name: "stock-6.12", Doing: "being built"}},
			"waiting for stock-6.12 (held by a process that left no note)"},
		{"pid reused", []holderNote{{Pid: me, ProcStart: procStart(me) + 1, Since: time.Now(), Name: "stock-6.12", Doing: "being built"}},
			"waiting for stock-6.12 (held by a process that left no note)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := layout{t.TempDir()}
			path := l.keyLockPath(kernelKey, "stock-6.12")
			os.MkdirAll(filepath.Dir(path), 0o755)
			for _, h := range tc.notes {
				if h.Pid == -1 {
					h.Pid = deadPid(t)
				}
				writeNote(t, path, h)
			}
			got := waitMessage(lockReq{path: path, name: "stock-6.12"})
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("waitMessage = %q, want %q...", got, tc.want)
			}
		})
	}
}

func TestStaleNoteDoesNotBlock(t *testing.T) {
	l := layout{t.TempDir()}
	path := l.keyLockPath(kernelKey, "stock-6.12")
	os.MkdirAll(filepath.Dir(path), 0o755)
	writeNote(t, path, holderNote{Pid: deadPid(t), Since: time.Now(), Name: "stock-6.12", Doing: "being built"})
	release, err := l.lockKey(context.Background(), kernelKey, "stock-6.12", "being built", false, func(msg string) {
		t.Errorf("waited on a free lock: %s", msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	release()
}

func TestInterruptedWaiterLeavesNothing(t *testing.T) {
	l := layout{t.TempDir()}
	ctx := context.Background()
	release, err := l.lockKey(ctx, kernelKey, "stock-6.12", "being built", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	before := listDir(t, l.locksDir())
	wctx, cancel := context.WithCancel(ctx)
	_, err = l.lockKey(wctx, kernelKey, "stock-6.12", "being built", false, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted lockKey = %v, want context.Canceled", err)
	}
	if after := listDir(t, l.locksDir()); !slices.Equal(before, after) {
		t.Errorf("locks dir %q after the waiter, want %q", after, before)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSharedKeyLocks(t *testing.T) {
	l := layout{t.TempDir()}
	ctx := context.Background()
	noWait := func(msg string) { t.Errorf("waited: %s", msg) }
	r1, err := l.lockKey(ctx, kernelKey, "base", "serving as the base of a", true, noWait)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.lockKey(ctx, kernelKey, "base", "serving as the base of b", true, noWait)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan string, 1)
	got := make(chan error, 1)
	go func() {
		r, err := l.lockKey(ctx, kernelKey, "base", "being built", false, func(msg string) {
			select {
			case waited <- msg:
			default:
			}
		})
		if err == nil {
			r()
		}
		got <- err
	}()
	msg := <-waited
	for _, want := range []string{"base serving as the base of a by pid", "base serving as the base of b by pid"} {
		if !strings.Contains(msg, want) {
			t.Errorf("wait message %q lacks %q", msg, want)
		}
	}
	r1()
	r2()
	if err := <-got; err != nil {
		t.Error(err)
	}
}

func TestGCSkipsHeldArtifact(t *testing.T) {
	specs, l, _ := gcFixture(t)
	held := filepath.Join(l.kernelsDir(), "gone-3333333333333333")
	release, err := Hold(filepath.Join(held, bzImageFile))
	if err != nil {
		t.Fatal(err)
	}
	removed, _, err := GC(context.Background(), l.root, specs, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range removed {
		if strings.Contains(r.Path, "3333333333333333") {
			t.Errorf("GC removed %s of a held kernel", r.Path)
		}
	}
	if _, err := loadArtifact(held); err != nil {
		t.Errorf("held artifact damaged: %v", err)
	}
	release()
	removed, _, err = GC(context.Background(), l.root, specs, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range removed {
		paths = append(paths, strings.TrimPrefix(r.Path, l.root+"/"))
	}
	slices.Sort(paths)
	want := []string{"index/h-3333333333333333.json", "kernels/gone-3333333333333333"}
	if !slices.Equal(paths, want) {
		t.Errorf("GC after release removed %q, want %q", paths, want)
	}
}

func TestGCWaitsForBuilds(t *testing.T) {
	specs, l, _ := gcFixture(t)
	ctx := context.Background()
	b := &builder{spec: &Spec{Name: "base"}, layout: l}
	release, err := b.lockBuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, _, err := GC(ctx, l.root, specs, GCOptions{DryRun: true, Progress: func(p Progress) {
			if p.Phase == PhaseWait {
				select {
				case waited <- p.Line:
				default:
				}
			}
		}})
		done <- err
	}()
	select {
	case msg := <-waited:
		if want := fmt.Sprintf("waiting for base being built by pid %d", os.Getpid()); !strings.HasPrefix(msg, want) {
			t.Errorf("GC's wait message %q, want it to start %q", msg, want)
		}
	case err := <-done:
		t.Fatalf("GC ran during a build: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHoldRemovedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bzImage")
	if _, err := Hold(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Hold of a missing file = %v, want an error naming it", err)
	}
}
