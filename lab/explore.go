package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
	"napilab/scenarios/explore"
)

type exploreOptions struct {
	kernel   string
	flavour  string
	runs     int
	time     time.Duration
	seed     uint64
	steps    int
	reruns   int
	out      string
	makeJobs int
}

func newExploreCmd(g *globalOptions) *cobra.Command {
	o := &exploreOptions{}
	cmd := &cobra.Command{
		Use:   "explore --kernel SPEC [--runs N | --time D]",
		Short: "Run random orders of NAPI knobs under load; minimize each new failure to a YAML reproducer",
		Long: `explore generates scenarios (scenarios/explore: threaded, link, GRO, XDP,
channels, RPS, busy poll and napi-set steps, some repeated, some parallel,
between the shipped NIC and veth fragments' loads), runs each on the kernel
and judges it as lab run does. A FAIL whose title is new is a finding: the
program is shrunk (delta debugging over steps, parallel branches and
repetitions; each candidate run up to --reruns times) to the smallest one
that still FAILs with that title, saved lint-clean under
OUT/findings/<title>/ beside the original. An ERROR never counts. Programs
are seeded: --seed S and run i give the program of seed S+i.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runExplore(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.kernel, "kernel", "k", "", "kernel spec to explore")
	f.StringVar(&o.flavour, "flavour", "", "build the kernel as this flavour (debug)")
	f.IntVar(&o.runs, "runs", 20, "programs to run (0: until --time)")
	f.DurationVar(&o.time, "time", 0, "stop starting programs after this long")
	f.Uint64Var(&o.seed, "seed", 1, "the first program's seed")
	f.IntVar(&o.steps, "steps", 8, "timeline steps per program")
	f.IntVar(&o.reruns, "reruns", 2, "runs of a candidate while minimizing before it counts as not failing")
	f.StringVarP(&o.out, "out", "o", "results/explore", "folder for programs, runs and findings")
	f.IntVarP(&o.makeJobs, "jobs", "j", 0, "make -j for kernel builds (0: the CPUs)")
	cmd.MarkFlagRequired("kernel")
	return cmd
}

// finding is one deduplicated failure.
type finding struct {
	title string
	seeds []uint64
	dir   string
}

func runExplore(cmd *cobra.Command, g *globalOptions, o *exploreOptions) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.runs <= 0 && o.time <= 0 {
		return fmt.Errorf("want --runs N or --time D")
	}
	if _, err := kernels.LoadSpec(o.kernel); err != nil {
		return err
	}
	gs := newGuests(g, o.makeJobs, stderr)
	gs.noCover = true
	defer gs.release()
	var err error
	if gs.flavour, err = kernels.ParseFlavour(o.flavour); err != nil {
		return err
	}
	kern, _, err := gs.kernel(ctx, o.kernel, gs.flavour)
	if err != nil {
		return err
	}
	release := kern.Release()
	for _, d := range []string{"programs", "runs", "findings"} {
		if err := os.MkdirAll(filepath.Join(o.out, d), 0o755); err != nil {
			return err
		}
	}
	// run runs one program once.
	run := func(p explore.Program, name string) (*results.Result, error) {
		path := filepath.Join(o.out, "programs", name+".yaml")
		data := p.YAML(name, fmt.Sprintf("lab explore, seed %d, on %s", p.Seed, o.kernel))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		s, err := scenarios.Parse(path, data, nil)
		if err != nil {
			return nil, fmt.Errorf("generated %s does not parse (a generator bug): %w", path, err)
		}
		cfg, err := gs.config(ctx, o.kernel, s)
		if err != nil {
			return nil, err
		}
		dir, err := results.NewRunDir(filepath.Join(o.out, "runs"), name)
		if err != nil {
			return nil, err
		}
		cfg.Scenario, cfg.OutDir = s, dir
		return runner.Run(ctx, cfg), nil
	}
	start := time.Now()
	findings := map[string]*finding{}
	var order []string
	counts := map[results.Verdict]int{}
	for i := 0; (o.runs <= 0 || i < o.runs) && (o.time <= 0 || time.Since(start) < o.time); i++ {
		if ctx.Err() != nil {
			break
		}
		seed, began := o.seed+uint64(i), time.Now()
		p := explore.Generate(seed, explore.Options{Steps: o.steps, Release: release})
		name := fmt.Sprintf("explore-%d", seed)
		res, err := run(p, name)
		if err != nil {
			return err
		}
		counts[res.Verdict]++
		title := dedupTitle(res)
		fmt.Fprintf(stdout, "%3d  seed %-6d %-5s %s  (%d steps, %.1fs; %d findings, %.1f runs/min)\n", i+1, seed, res.Verdict, title,
			p.Size(), time.Since(began).Seconds(), len(findings), float64(i+1)/time.Since(start).Minutes())
		if res.Verdict != results.Fail || ctx.Err() != nil {
			continue
		}
		if f, ok := findings[title]; ok {
			f.seeds = append(f.seeds, seed)
			continue
		}
		f := &finding{title: title, seeds: []uint64{seed}, dir: filepath.Join(o.out, "findings", slug(title))}
		findings[title] = f
		order = append(order, title)
		if err := minimizeFinding(ctx, f, p, run, o, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d programs in %s: %d PASS, %d FAIL, %d ERROR; %d findings\n", counts[results.Pass]+counts[results.Fail]+counts[results.Error]+counts[results.Inconclusive],
		time.Since(start).Round(time.Second), counts[results.Pass], counts[results.Fail], counts[results.Error], len(findings))
	for _, t := range order {
		f := findings[t]
		fmt.Fprintf(stdout, "FINDING  %s  (seeds %v): %s\n", t, f.seeds, filepath.Join(f.dir, "minimized.yaml"))
	}
	switch {
	case len(findings) > 0:
		return &exitCodeError{code: exitFail}
	case counts[results.Error] > 0 && counts[results.Pass] == 0:
		return &exitCodeError{code: exitError, err: fmt.Errorf("every program ended ERROR: see %s", filepath.Join(o.out, "runs"))}
	}
	return nil
}

// minimizeFinding saves the finding's original program and its smallest
// reproducer: a candidate reproduces when one of up to --reruns runs FAILs
// with the same title.
func minimizeFinding(ctx context.Context, f *finding, p explore.Program, run func(explore.Program, string) (*results.Result, error),
	o *exploreOptions, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	header := fmt.Sprintf("lab explore finding on %s: %s\nseed %d", o.kernel, f.title, p.Seed)
	if err := os.WriteFile(filepath.Join(f.dir, "original.yaml"), p.YAML("explore-"+slug(f.title), header), 0o644); err != nil {
		return err
	}
	start, tried := time.Now(), 0
	judge := func(c explore.Program) (bool, error) {
		tried++
		for k := range o.reruns {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			res, err := run(c, fmt.Sprintf("min-%d-%d-%d", p.Seed, tried, k))
			if err != nil {
				return false, err
			}
			if res.Verdict == results.Fail && dedupTitle(res) == f.title {
				fmt.Fprintf(stderr, "  candidate %d (%d steps): reproduced\n", tried, c.Size())
				return true, nil
			}
		}
		fmt.Fprintf(stderr, "  candidate %d (%d steps): not reproduced in %d runs\n", tried, c.Size(), o.reruns)
		return false, nil
	}
	m, err := explore.Minimize(p, judge)
	if err != nil && ctx.Err() == nil {
		return err
	}
	header += fmt.Sprintf("\nminimized from %d to %d steps (%d candidates, %s)", p.Size(), m.Size(), tried, time.Since(start).Round(time.Second))
	path := filepath.Join(f.dir, "minimized.yaml")
	if err := os.WriteFile(path, m.YAML("explore-"+slug(f.title), header), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  finding: %s, minimized from %d to %d steps in %s: %s\n", f.title, p.Size(), m.Size(), time.Since(start).Round(time.Second), path)
	return nil
}

// dedupTitle is a result's title with what differs between programs (a
// step's generated name) taken out.
func dedupTitle(r *results.Result) string {
	t := r.Title()
	if strings.HasPrefix(t, "hang in step ") {
		return "hang in a step (no stuck function)"
	}
	return t
}

var nonSlug = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// slug makes a title (the kernel's words: hostile) one safe folder name.
func slug(title string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(title, "-"), "-")
	if len(s) > 80 {
		s = s[:80]
	}
	if s == "" {
		return "finding"
	}
	return s
}
