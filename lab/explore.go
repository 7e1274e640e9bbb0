package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
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
	jobs     int
	makeJobs int
	unguided bool
}

func newExploreCmd(g *globalOptions) *cobra.Command {
	o := &exploreOptions{}
	cmd := &cobra.Command{
		Use:   "explore --kernel SPEC [--runs N | --time D]",
		Short: "Run random orders of NAPI knobs under load; minimize each new failure to a YAML reproducer",
		Long: `explore generates scenarios (scenarios/explore: threaded, link, GRO, XDP,
channels, RPS, XPS, qdisc, kthread and IRQ affinity, busy poll and napi-set
steps, some repeated, some parallel, sometimes with a delay probe at a NAPI
function, between the shipped NIC and veth fragments' loads, whose receivers
busy-poll in half the programs), runs each on
the kernel and judges it as lab run does. Each run counts the calls of the
NAPI functions the knobs reach; a program that reached a state no earlier one
did (a call count, a refusal) joins the corpus (OUT/corpus.json), and a
quarter of the programs are mutations of corpus programs, the rarest states' most often
(--unguided: every program drawn afresh). A FAIL whose title is new is a
finding: the program is shrunk (delta debugging over steps, parallel
branches, repetitions, the delay and busy polling; each candidate run up to --reruns
times) to the smallest one that still FAILs with that title, saved
lint-clean under OUT/findings/<title>/ beside the original. An ERROR never
counts. A folder explored before keeps its corpus and findings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runExplore(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.kernel, "kernel", "k", "", "kernel spec to explore")
	f.StringVar(&o.flavour, "flavour", "", "build the kernel as this flavour (debug)")
	f.IntVar(&o.runs, "runs", 20, "programs to run (0: until --time; --time alone means 0)")
	f.DurationVar(&o.time, "time", 0, "stop starting programs after this long")
	f.Uint64Var(&o.seed, "seed", 1, "the first program's seed")
	f.IntVar(&o.steps, "steps", explore.DefaultSteps, "timeline steps per program")
	f.IntVar(&o.reruns, "reruns", 2, "runs of a candidate while minimizing before it counts as not failing")
	f.StringVarP(&o.out, "out", "o", "results/explore", "folder for programs, runs, the corpus and findings")
	f.IntVarP(&o.jobs, "jobs", "j", 1, "programs at once (guests; bounded by host cores and memory)")
	f.IntVar(&o.makeJobs, "make-jobs", 0, "make -j for kernel builds (0: the CPUs)")
	f.BoolVar(&o.unguided, "unguided", false, "draw every program afresh: no corpus")
	cmd.MarkFlagRequired("kernel")
	cmd.AddCommand(newTriageCmd(g))
	return cmd
}

func runExplore(cmd *cobra.Command, g *globalOptions, o *exploreOptions) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if cmd.Flags().Changed("time") && !cmd.Flags().Changed("runs") {
		o.runs = 0 // --time 30m means thirty minutes, not the default 20 programs
	}
	if o.runs <= 0 && o.time <= 0 {
		return fmt.Errorf("want --runs N or --time D")
	}
	if _, err := kernels.LoadSpec(o.kernel); err != nil {
		return err
	}
	gs := newGuests(g, o.makeJobs, stderr)
	defer gs.Release()
	var err error
	if gs.Flavour, err = kernels.ParseFlavour(o.flavour); err != nil {
		return err
	}
	kern, _, err := gs.Kernel(ctx, o.kernel, gs.Flavour)
	if err != nil {
		return err
	}
	// Count the calls of the NAPI functions this kernel has symbols for.
	watched, err := kernels.PresentFunctions(kern, explore.Watched)
	if err != nil {
		return err
	}
	for _, c := range watched {
		gs.CoverFns = append(gs.CoverFns, c.Func)
	}
	gs.NoCover = len(gs.CoverFns) == 0
	for _, d := range []string{"programs", "runs"} {
		if err := os.MkdirAll(filepath.Join(o.out, d), 0o755); err != nil {
			return err
		}
	}
	var configMu sync.Mutex // gs builds and caches: one caller at a time
	run := func(ctx context.Context, p explore.Program, name string) (explore.Outcome, error) {
		path := filepath.Join(o.out, "programs", name+".yaml")
		data := p.YAML(name, fmt.Sprintf("lab explore, seed %d, on %s", p.Seed, o.kernel))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return explore.Outcome{}, err
		}
		s, err := scenarios.Parse(path, data, nil)
		if err != nil {
			return explore.Outcome{}, fmt.Errorf("generated %s does not parse (a generator bug): %w", path, err)
		}
		configMu.Lock()
		cfg, err := gs.Config(ctx, o.kernel, s)
		configMu.Unlock()
		if err != nil {
			return explore.Outcome{}, err
		}
		// A debug kernel's parameters (the fragments' rates, the longer
		// deadline), as lab run gives them.
		if s, _, err = campaign.ForKernel(cfg, s, nil); err != nil {
			return explore.Outcome{}, err
		}
		dir, err := results.NewRunDir(filepath.Join(o.out, "runs"), name)
		if err != nil {
			return explore.Outcome{}, err
		}
		cfg.Scenario, cfg.OutDir = s, dir
		return outcome(runner.Run(ctx, cfg)), nil
	}
	sum, err := explore.Explore(ctx, explore.Config{
		Kernel:   o.kernel,
		Flavour:  o.flavour,
		Options:  explore.Options{Steps: o.steps, Release: kern.Release()},
		Seed:     o.seed,
		Runs:     o.runs,
		Time:     o.time,
		Jobs:     runner.MaxParallel(o.jobs, 256), // the fragments' default machine
		Reruns:   o.reruns,
		Unguided: o.unguided,
		Out:      o.out,
		Progress: stdout,
		Log:      stderr,
	}, run)
	if err != nil && ctx.Err() == nil {
		return err
	}
	v := sum.Verdicts
	fmt.Fprintf(stdout, "%d programs in %s: %d PASS, %d FAIL, %d ERROR; %d features, corpus %d; %d findings\n", sum.Programs(),
		sum.Took.Round(time.Second), v[results.Pass], v[results.Fail], v[results.Error], sum.Features, sum.Corpus, len(sum.Findings))
	for _, f := range sum.Findings {
		fmt.Fprintf(stdout, "FINDING  %s  (seeds %v): %s\n", f.Title, f.Seeds, filepath.Join(f.Dir, "minimized.yaml"))
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(sum.Findings) > 0:
		return &exitCodeError{code: exitFail}
	case v[results.Error] > 0 && v[results.Pass] == 0:
		return &exitCodeError{code: exitError, err: fmt.Errorf("every program ended ERROR: see %s", filepath.Join(o.out, "runs"))}
	}
	return nil
}

// outcome is what explore needs of a run: its verdict, its title with what
// differs between programs taken out, the steps the kernel refused and the
// calls counted.
func outcome(r *results.Result) explore.Outcome {
	out := explore.Outcome{Verdict: r.Verdict, Title: dedupTitle(r),
		Reached: explore.Reached{Refused: map[string]bool{}, Calls: map[string]uint64{}}}
	for _, st := range r.Steps {
		if st.Tolerated > 0 {
			out.Reached.Refused[st.Name] = true
		}
	}
	if r.Coverage != nil {
		for _, f := range r.Coverage.Funcs {
			out.Reached.Calls[f.Func] = f.Calls
		}
	}
	return out
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
