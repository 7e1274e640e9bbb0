package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"napilab/internal/safefs"
	"napilab/results"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Outcome is what one run of a program showed, as explore needs it.
type Outcome struct {
	Verdict results.Verdict
	Title   string // the FAIL's title (a splat, a hang, an invariant)
	Reached Reached
}

// Run runs a program once, saved and named name, and judges it.
type Run func(ctx context.Context, p Program, name string) (Outcome, error)

// Config is one exploration.
type Config struct {
	Kernel   string // the spec, for the findings' headers
	Flavour  string // the kernel's build flavour ("debug"), for lab explore triage
	Options  Options
	Seed     uint64        // the first program's seed
	Runs     int           // programs to run; 0: until Time
	Time     time.Duration // stop starting programs after this long; 0: until Runs
	Jobs     int           // programs at once (default 1)
	Reruns   int           // runs of a candidate while minimizing before it counts as not failing
	Unguided bool          // draw every program afresh: no corpus
	Out      string        // the folder of corpus.json and findings/
	Progress io.Writer     // a line per program and per finding
	Log      io.Writer     // the minimizer's candidates
}

// Finding is one failure, deduplicated by title.
type Finding struct {
	Title     string   `json:"title"`
	Seeds     []uint64 `json:"seeds"` // the programs that failed with it
	Kernel    string   `json:"kernel"`
	Flavour   string   `json:"flavour,omitempty"` // the kernel's build flavour: triage builds the same
	Original  int      `json:"original_steps"`
	Minimized int      `json:"minimized_steps"`
	Dir       string   `json:"-"`
}

// Summary is what an exploration did.
type Summary struct {
	Verdicts map[results.Verdict]int
	Findings []*Finding // in the order found
	Features int        // distinct features the runs reached
	Corpus   int        // programs kept for mutation
	Took     time.Duration
}

// Programs is how many programs ran.
func (s Summary) Programs() int {
	n := 0
	for _, c := range s.Verdicts {
		n += c
	}
	return n
}

// explorer is the shared state of an exploration's workers.
type explorer struct {
	cfg   Config
	run   Run
	start time.Time

	mu       sync.Mutex
	next     int // the index of the next program
	corpus   Corpus
	findings map[string]*Finding
	sum      Summary
	err      error
}

// Explore runs generated programs until cfg.Runs or cfg.Time, keeps the
// ones that reached new features as the corpus later programs mutate
// (OUT/corpus.json, read back when it exists), and minimizes each failure
// whose title is new into OUT/findings/<title>/. An ERROR never counts as
// a finding. With Jobs above 1 the program of a seed depends on which
// runs ended first; the saved YAML is the reproducer either way.
func Explore(ctx context.Context, cfg Config, run Run) (Summary, error) {
	if cfg.Runs <= 0 && cfg.Time <= 0 {
		return Summary{}, errors.New("want a number of runs or a time")
	}
	cfg.Jobs = max(cfg.Jobs, 1)
	cfg.Reruns = max(cfg.Reruns, 1)
	e := &explorer{cfg: cfg, run: run, start: time.Now(), findings: map[string]*Finding{},
		sum: Summary{Verdicts: map[results.Verdict]int{}}}
	if err := os.MkdirAll(filepath.Join(cfg.Out, "findings"), 0o755); err != nil {
		return e.sum, err
	}
	if err := e.load(); err != nil {
		return e.sum, err
	}
	var wg sync.WaitGroup
	for range cfg.Jobs {
		wg.Go(func() { e.work(ctx) })
	}
	wg.Wait()
	e.sum.Took = time.Since(e.start)
	e.sum.Features, e.sum.Corpus = e.corpus.Features(), len(e.corpus.Programs)
	if e.err == nil && ctx.Err() != nil {
		e.err = ctx.Err()
	}
	return e.sum, e.err
}

// take hands out the next program's index, or false when the exploration
// is over.
func (e *explorer) take(ctx context.Context) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	over := e.err != nil || ctx.Err() != nil ||
		e.cfg.Runs > 0 && e.next >= e.cfg.Runs ||
		e.cfg.Time > 0 && time.Since(e.start) >= e.cfg.Time
	if over {
		return 0, false
	}
	e.next++
	return e.next - 1, true
}

func (e *explorer) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *explorer) work(ctx context.Context) {
	for {
		i, ok := e.take(ctx)
		if !ok {
			return
		}
		seed := e.cfg.Seed + uint64(i)
		e.mu.Lock()
		p := e.program(seed)
		e.mu.Unlock()
		began := time.Now()
		out, err := e.run(ctx, p, fmt.Sprintf("explore-%d", seed))
		if ctx.Err() != nil {
			return // a run cut short says nothing
		}
		if err != nil {
			e.fail(err)
			return
		}
		f, isNew := e.judged(i, p, out, time.Since(began))
		if isNew {
			if err := e.minimize(ctx, f, p); err != nil && ctx.Err() == nil {
				e.fail(err)
				return
			}
		}
	}
}

// program draws the program of seed (under e.mu).
func (e *explorer) program(seed uint64) Program {
	if e.cfg.Unguided {
		return Generate(seed, e.cfg.Options)
	}
	return e.corpus.Next(seed, e.cfg.Options)
}

// judged counts a run, feeds the corpus, prints the progress line and
// returns the finding of a FAIL, new or not.
func (e *explorer) judged(i int, p Program, out Outcome, took time.Duration) (*Finding, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sum.Verdicts[out.Verdict]++
	grew := ""
	if !e.cfg.Unguided && out.Verdict != results.Error {
		if n := e.corpus.Add(p, Features(p, out.Reached)); n > 0 {
			grew = fmt.Sprintf(", +%d features", n)
			if err := e.save(); err != nil && e.err == nil {
				e.err = err
			}
		}
	}
	fmt.Fprintf(e.cfg.Progress, "%4d  seed %-7d %-5s %s  (%d steps, %.1fs%s; %s)\n", i+1, p.Seed, out.Verdict, out.Title,
		p.Size(), took.Seconds(), grew, e.rates())
	if out.Verdict != results.Fail {
		return nil, false
	}
	if f, ok := e.findings[out.Title]; ok {
		f.Seeds = append(f.Seeds, p.Seed)
		return f, false
	}
	f := &Finding{Title: out.Title, Seeds: []uint64{p.Seed}, Kernel: e.cfg.Kernel, Flavour: e.cfg.Flavour, Original: p.Size(),
		Dir: filepath.Join(e.cfg.Out, "findings", Slug(out.Title))}
	e.findings[out.Title] = f
	e.sum.Findings = append(e.sum.Findings, f)
	return f, true
}

// rates is the progress line's tail: findings, corpus, rate and what is
// left (under e.mu).
func (e *explorer) rates() string {
	ran := e.sum.Programs()
	mins := time.Since(e.start).Minutes()
	rate := float64(ran) / mins
	left := ""
	switch {
	case e.cfg.Time > 0:
		left = fmt.Sprintf(", %s left", (e.cfg.Time - time.Since(e.start)).Round(time.Second).String())
	case rate > 0:
		left = fmt.Sprintf(", ETA %s", time.Duration(float64(e.cfg.Runs-ran)/rate*float64(time.Minute)).Round(time.Second))
	}
	return fmt.Sprintf("%d findings, corpus %d, %.1f runs/min%s", len(e.sum.Findings), len(e.corpus.Programs), rate, left)
}

// minimize saves the finding's original program and its smallest
// reproducer: a candidate reproduces when one of up to Reruns runs FAILs
// with the same title.
func (e *explorer) minimize(ctx context.Context, f *Finding, p Program) error {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	name := "explore-" + Slug(f.Title)
	header := fmt.Sprintf("lab explore finding on %s: %s\nseed %d", e.cfg.Kernel, f.Title, p.Seed)
	if err := os.WriteFile(filepath.Join(f.Dir, "original.yaml"), p.YAML(name, header), 0o644); err != nil {
		return err
	}
	start, tried := time.Now(), 0
	judge := func(c Program) (bool, error) {
		tried++
		for k := range e.cfg.Reruns {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			out, err := e.run(ctx, c, fmt.Sprintf("min-%d-%d-%d", p.Seed, tried, k))
			if err != nil {
				return false, err
			}
			if out.Verdict == results.Fail && out.Title == f.Title {
				fmt.Fprintf(e.cfg.Log, "  candidate %d (%d steps): reproduced\n", tried, c.Size())
				return true, nil
			}
		}
		fmt.Fprintf(e.cfg.Log, "  candidate %d (%d steps): not reproduced in %d runs\n", tried, c.Size(), e.cfg.Reruns)
		return false, nil
	}
	m, err := Minimize(p, judge)
	took := time.Since(start).Round(time.Second)
	if ctx.Err() != nil {
		// Cut short: the smallest program so far, but no finding.json, so
		// that a resumed exploration minimizes the title again.
		header += fmt.Sprintf("\nminimization interrupted at %d of %d steps (%d candidates, %s)", m.Size(), p.Size(), tried, took)
		return os.WriteFile(filepath.Join(f.Dir, "partial.yaml"), m.YAML(name, header), 0o644)
	}
	if err != nil {
		return err
	}
	header += fmt.Sprintf("\nminimized from %d to %d steps (%d candidates, %s)", p.Size(), m.Size(), tried, took)
	path := filepath.Join(f.Dir, "minimized.yaml")
	if err := os.WriteFile(path, m.YAML(name, header), 0o644); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(f.Dir, "partial.yaml")) // an earlier, interrupted try's
	e.mu.Lock()
	f.Minimized = m.Size()
	data, _ := json.MarshalIndent(f, "", "  ")
	e.mu.Unlock()
	if err := os.WriteFile(filepath.Join(f.Dir, "finding.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.cfg.Progress, "  finding: %s, minimized from %d to %d steps in %s: %s\n", f.Title, p.Size(), m.Size(), took, path)
	return nil
}

// corpusFile is the corpus of an exploration's folder.
func (e *explorer) corpusFile() string { return filepath.Join(e.cfg.Out, "corpus.json") }

// savedCorpus is corpus.json: the programs kept, their features and the
// runs that reached each feature.
type savedCorpus struct {
	Programs []Program      `json:"programs"`
	Features [][]string     `json:"features"`
	Hits     map[string]int `json:"hits"`
}

// save writes the corpus (under e.mu), whole or not at all.
func (e *explorer) save() error {
	data, err := json.Marshal(savedCorpus{Programs: e.corpus.Programs, Features: e.corpus.feats, Hits: e.corpus.hits})
	if err != nil {
		return err
	}
	tmp := e.corpusFile() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, e.corpusFile())
}

// load reads what an earlier exploration of the folder left: its corpus
// (less the programs with knobs the release lacks) and its findings, so a
// title found before is not minimized again.
func (e *explorer) load() error {
	if !e.cfg.Unguided {
		data, err := safefs.ReadRegular(e.corpusFile(), MaxCorpusSize)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			var sc savedCorpus
			if err := json.Unmarshal(data, &sc); err != nil {
				return fmt.Errorf("%s: %w", e.corpusFile(), err)
			}
			if len(sc.Features) != len(sc.Programs) {
				return fmt.Errorf("%s: %d programs but %d feature lists", e.corpusFile(), len(sc.Programs), len(sc.Features))
			}
			for i, p := range sc.Programs {
				if p.fits(e.cfg.Options.Release) {
					e.corpus.Programs = append(e.corpus.Programs, p.sane())
					e.corpus.feats = append(e.corpus.feats, sc.Features[i])
				}
			}
			e.corpus.hits = sc.Hits
		}
	}
	olds, _ := filepath.Glob(filepath.Join(e.cfg.Out, "findings", "*", "finding.json"))
	for _, path := range olds {
		f := &Finding{Dir: filepath.Dir(path)}
		data, err := ReadFinding(path)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, f); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		e.findings[f.Title] = f
	}
	return nil
}

// Caps of what explore reads back from a folder (hostile: anyone's).
const (
	MaxCorpusSize  = 64 << 20 // a 2-hour exploration's corpus.json: 180 KB
	MaxFindingSize = 1 << 20  // a finding.json: 200 bytes
)

// ReadFinding reads a finding.json, capped.
func ReadFinding(path string) ([]byte, error) { return safefs.ReadRegular(path, MaxFindingSize) }

var nonSlug = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Slug makes a title (the kernel's words: hostile) one safe folder name.
func Slug(title string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(title, "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	if s == "" {
		return "finding"
	}
	return s
}
