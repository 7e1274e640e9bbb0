package explore

import (
	"context"
	"io"
	"napilab/results"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// hang73 is a fake 7.3.4: threaded goes to 0 on eth0 while eth0 is down and
// the guest hangs in napi_set_threaded. It counts napi_disable's calls (one
// per link down) as the probes would, and ERRORs every program with an XDP
// step (the lab could not run it).
func hang73(ctx context.Context, p Program, _ string) (Outcome, error) {
	down, hung, xdp := false, false, false
	calls := uint64(0)
	var walk func([]Step)
	walk = func(steps []Step) {
		for _, st := range steps {
			walk(st.Branches)
			switch {
			case strings.HasPrefix(st.Action, "xdp:"):
				xdp = true
			case st.Action == "link: {dev: eth0, state: down}":
				down = true
				calls++
			case st.Action == "link: {dev: eth0, state: up}":
				down = false
			case st.Action == `write: {path: /sys/class/net/eth0/threaded, value: "0"}` && down:
				hung = true
			}
		}
	}
	walk(p.Steps)
	reached := Reached{Calls: map[string]uint64{"napi_disable": calls}}
	switch {
	case xdp:
		return Outcome{Verdict: results.Error, Title: "could not attach XDP"}, nil
	case hung:
		return Outcome{Verdict: results.Fail, Title: "hang in napi_set_threaded", Reached: reached}, nil
	}
	return Outcome{Verdict: results.Pass, Reached: reached}, nil
}

func quiet(c Config) Config {
	c.Progress, c.Log = io.Discard, io.Discard
	return c
}

// TestExploreFinds: the fake bug is found once, minimized to its two steps
// and saved; later programs that hit it add their seeds; ERRORs are no
// findings; a second exploration of the folder reads the corpus back and
// does not minimize the known finding again.
func TestExploreFinds(t *testing.T) {
	out := t.TempDir()
	var runs atomic.Int64
	run := func(ctx context.Context, p Program, name string) (Outcome, error) {
		runs.Add(1)
		return hang73(ctx, p, name)
	}
	cfg := quiet(Config{Kernel: "fake-7.3", Options: Options{Release: "7.3"}, Seed: 1, Runs: 150, Reruns: 1, Out: out})
	sum, err := Explore(context.Background(), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Findings) != 1 || sum.Findings[0].Title != "hang in napi_set_threaded" {
		t.Fatalf("findings %+v, want the hang once", sum.Findings)
	}
	f := sum.Findings[0]
	if f.Minimized != 2 || len(f.Seeds) < 2 {
		t.Errorf("finding %+v: want 2 steps minimized and more than one seed", f)
	}
	min, err := os.ReadFile(filepath.Join(f.Dir, "minimized.yaml"))
	if err != nil || !strings.Contains(string(min), "state: down") || !strings.Contains(string(min), "# lab explore finding on fake-7.3") {
		t.Errorf("minimized.yaml: %v\n%s", err, min)
	}
	for _, name := range []string{"original.yaml", "finding.json"} {
		if _, err := os.Stat(filepath.Join(f.Dir, name)); err != nil {
			t.Error(err)
		}
	}
	if sum.Verdicts[results.Error] == 0 || sum.Programs() != 150 || sum.Corpus == 0 {
		t.Errorf("summary %+v: want ERRORs among 150 programs and a corpus", sum)
	}
	if _, err := os.Stat(filepath.Join(out, "corpus.json")); err != nil {
		t.Fatal(err)
	}

	runs.Store(0)
	cfg.Seed, cfg.Runs = 1000, 50
	again, err := Explore(context.Background(), cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Findings) != 0 || runs.Load() != 50 {
		t.Errorf("second exploration: %d new findings, %d runs; want 0 and 50 (no minimizing)", len(again.Findings), runs.Load())
	}
	if again.Features < sum.Features {
		t.Errorf("the corpus was not read back: %d features after, %d before", again.Features, sum.Features)
	}
}

// TestExploreCancel: a cancel ends the exploration with the context's
// error and every worker gone; the corpus stays readable.
func TestExploreCancel(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	run := func(ctx context.Context, p Program, name string) (Outcome, error) {
		if runs.Add(1) == 20 {
			cancel()
		}
		return Outcome{Verdict: results.Pass, Reached: Reached{Calls: map[string]uint64{"f": uint64(runs.Load())}}}, nil
	}
	sum, err := Explore(ctx, quiet(Config{Seed: 1, Runs: 1000, Jobs: 2, Out: out}), run)
	if err != context.Canceled || runs.Load() > 22 {
		t.Fatalf("err %v after %d runs", err, runs.Load())
	}
	var c explorer
	c.cfg.Out = out
	c.findings = map[string]*Finding{}
	if err := c.load(); err != nil || len(c.corpus.Programs) == 0 || len(c.corpus.Programs) > sum.Corpus {
		t.Fatalf("corpus read back: %v, %d programs (summary %d)", err, len(c.corpus.Programs), sum.Corpus)
	}
}

// deep is a fake kernel with a bug three states deep: eth0 down, its
// channels changed while down (counted: the probes see it), then threaded
// to 0 while still down. Each state on the way is a feature the corpus
// keeps.
func deep(ctx context.Context, p Program, _ string) (Outcome, error) {
	down, changed, hung := false, uint64(0), false
	var walk func([]Step)
	walk = func(steps []Step) {
		for _, st := range steps {
			walk(st.Branches)
			switch {
			case st.Action == "link: {dev: eth0, state: down}":
				down = true
			case st.Action == "link: {dev: eth0, state: up}":
				down, changed = false, 0
			case strings.HasPrefix(st.Action, "channels: {dev: eth0") && down:
				changed++
			case st.Action == `write: {path: /sys/class/net/eth0/threaded, value: "0"}` && changed > 0 && down:
				hung = true
			}
		}
	}
	walk(p.Steps)
	if hung {
		return Outcome{Verdict: results.Fail, Title: "hang"}, nil
	}
	return Outcome{Verdict: results.Pass, Reached: Reached{Calls: map[string]uint64{"channels while down": changed}}}, nil
}

// BenchmarkExploreGuided measures the programs the corpus-guided search
// and drawing each afresh need to the first FAIL of the fake kernels (the
// median over 25 seeds): guided-shallow, unguided-shallow, guided-deep and
// unguided-deep.
func BenchmarkExploreGuided(b *testing.B) {
	first := func(kernel Run, seed uint64, unguided bool) int {
		n := 0
		run := func(ctx context.Context, p Program, name string) (Outcome, error) {
			o, err := kernel(ctx, p, name)
			n++
			if o.Verdict == results.Fail {
				return o, context.Canceled
			}
			return o, err
		}
		Explore(context.Background(), quiet(Config{Options: Options{Release: "7.3"}, Seed: seed, Runs: 5000, Unguided: unguided, Out: b.TempDir()}), run)
		return n
	}
	median := func(xs []int) float64 { slices.Sort(xs); return float64(xs[len(xs)/2]) }
	for range b.N {
		for _, k := range []struct {
			name   string
			kernel Run
		}{{"shallow", hang73}, {"deep", deep}} {
			var g, u []int
			for seed := uint64(1); seed <= 25; seed++ {
				g, u = append(g, first(k.kernel, seed*10000, false)), append(u, first(k.kernel, seed*10000, true))
			}
			b.ReportMetric(median(g), "guided-"+k.name+"-programs")
			b.ReportMetric(median(u), "unguided-"+k.name+"-programs")
		}
	}
}

// TestSlug: a finding's folder is one safe name whatever the kernel said.
func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"hang in napi_set_threaded":                     "hang-in-napi_set_threaded",
		"WARNING in napi_disable (net/core/dev.c:6402)": "WARNING-in-napi_disable-net-core-dev-c-6402",
		"../../etc":                              "etc",
		"..":                                     "finding",
		"":                                       "finding",
		"invariant failed: threaded-not-softirq": "invariant-failed-threaded-not-softirq",
		strings.Repeat("x", 300):                 strings.Repeat("x", 80),
	} {
		if got := Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestExploreReadsBackCapped: what a folder holds is anyone's: a corpus
// that is a FIFO and a finding.json over its cap are refused, not read
// (nor waited on).
func TestExploreReadsBackCapped(t *testing.T) {
	never := func(context.Context, Program, string) (Outcome, error) {
		t.Fatal("a program ran")
		return Outcome{}, nil
	}
	out := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(out, "corpus.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Explore(context.Background(), quiet(Config{Runs: 1, Out: out}), never); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO corpus: %v", err)
	}
	out = t.TempDir()
	big := filepath.Join(out, "findings", "x")
	os.MkdirAll(big, 0o755)
	os.WriteFile(filepath.Join(big, "finding.json"), make([]byte, MaxFindingSize+1), 0o644)
	if _, err := Explore(context.Background(), quiet(Config{Runs: 1, Out: out}), never); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("a finding.json over its cap: %v", err)
	}
}

// TestExploreInterruptedMinimization: a cancel during minimization leaves
// the smallest program so far as partial.yaml and no finding.json, so a
// resumed exploration of the folder minimizes the title again, whole.
func TestExploreInterruptedMinimization(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var candidates atomic.Int64
	run := func(ctx context.Context, p Program, name string) (Outcome, error) {
		if strings.HasPrefix(name, "min-") && candidates.Add(1) == 3 {
			cancel()
		}
		return hang73(ctx, p, name)
	}
	cfg := quiet(Config{Kernel: "fake-7.3", Options: Options{Release: "7.3"}, Seed: 1, Runs: 150, Reruns: 1, Out: out})
	if _, err := Explore(ctx, cfg, run); err != context.Canceled {
		t.Fatalf("err %v, want the cancel", err)
	}
	dir := filepath.Join(out, "findings", Slug("hang in napi_set_threaded"))
	if _, err := os.Stat(filepath.Join(dir, "finding.json")); !os.IsNotExist(err) {
		t.Errorf("finding.json after an interrupted minimization: %v", err)
	}
	if part, err := os.ReadFile(filepath.Join(dir, "partial.yaml")); err != nil || !strings.Contains(string(part), "# minimization interrupted at") {
		t.Errorf("partial.yaml: %v\n%s", err, part)
	}

	sum, err := Explore(context.Background(), cfg, hang73)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Findings) != 1 || sum.Findings[0].Minimized != 2 {
		t.Fatalf("resumed: findings %+v, want the hang minimized to 2 steps", sum.Findings)
	}
	if _, err := os.Stat(filepath.Join(dir, "partial.yaml")); !os.IsNotExist(err) {
		t.Errorf("partial.yaml outlived the whole minimization: %v", err)
	}
}
