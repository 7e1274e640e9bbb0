package main

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/runner/campaign"
)

type runOptions struct {
	campaign.RunOptions
	params   []string
	matrix   []string
	makeJobs int
	parallel int
	noCover  bool
	cover    []string
	shard    string
	tree     treeOptions // --tree: an ad-hoc spec, in place of the default -k
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run SCENARIO... [--kernel SPEC]...",
		Short: "Boot kernels and run scenarios; exit 0 PASS, 1 FAIL, 2 ERROR, 3 INCONCLUSIVE",
		Long: `Runs every scenario (and parameter set) on every kernel, --repeat times each, -j at once
(longest first, bounded by host cores and memory). With --repeat the failure rate of each scenario is
reported with a Wilson 95% interval and the distinct failure titles; --until-fail stops at the first
failure. --shard K/N runs the K-th of N deterministic slices of the whole matrix (merge the shard
folders with lab results merge). Every run folder holds replay.json for lab repro.
A scenario with a perf: block runs as an A/B measurement after the others: its baseline kernel (by
default the spec the tested kernel extends) and the tested kernel interleaved, perf.repeat runs each,
then every budget is checked: FAIL when a metric moved past its budget beyond the run-to-run noise,
INCONCLUSIVE (exit code 3) when the noise hides whether it did, with the runs that would decide.
--against-baseline takes side A from a fitting stored baseline (lab baseline record).
Runs start as soon as the guest they boot is built, while the next builds: every kernel in order,
then the flavours and images some scenarios need (kselftest, debug). Builds beside runs are niced;
guests beside them still boot slower and time noisier (timing-only failures run once more); perf
runs wait for every build. A failed build is an ERROR for the scenarios that needed it; the others
run. --build-first builds everything before the first run.
--tree DIR runs on a local kernel tree (see lab kernel build --tree) instead of the default kernel,
or beside the kernels -k names.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarios(cmd, g, o, args)
		},
	}
	cmd.Flags().StringArrayVarP(&o.Kernels, "kernel", "k", []string{"kernels/stock-6.1.yaml"}, "kernel spec (repeatable: every scenario runs on each)")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value (repeatable)")
	cmd.Flags().StringArrayVar(&o.matrix, "matrix", nil, "run once per value: name=v1,v2,... (repeatable: the cross product)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "results/runs", "folder for run folders")
	cmd.Flags().StringVar(&o.Accel, "accel", "", "kvm or tcg (default tcg, or $NAPILAB_ACCEL)")
	cmd.Flags().IntVar(&o.makeJobs, "make-jobs", 0, "make -j for kernel builds")
	cmd.Flags().IntVarP(&o.parallel, "jobs", "j", 1, "guests at once (bounded by host cores and memory)")
	cmd.Flags().IntVarP(&o.Repeat, "repeat", "n", 1, "runs of each scenario on each kernel")
	cmd.Flags().BoolVar(&o.UntilFail, "until-fail", false, "stop starting runs after the first FAIL")
	cmd.Flags().BoolVar(&o.NoPolls, "no-polls", false, "do not sample who polled each NAPI (no BPF in the guest unless an assertion needs it)")
	cmd.Flags().BoolVar(&o.noCover, "no-cover", false, "do not count the calls of the functions a kernel's series changes (kprobes in every run of a kernel with patches of its own)")
	cmd.Flags().StringSliceVar(&o.cover, "cover", nil, "count the calls of these kernel functions in every run instead of the series' (name,name,...: did a scenario reach them?)")
	cmd.Flags().StringVar(&o.shard, "shard", "", "run only shard K/N of the matrix, e.g. 2/4")
	cmd.Flags().BoolVarP(&o.Verbose, "verbose", "v", false, "print the runner's progress (boot, steps, kselftests)")
	cmd.Flags().StringVar(&o.Flavour, "flavour", "", flavourUsage)
	cmd.Flags().BoolVar(&o.BuildFirst, "build-first", false, buildFirstUsage)
	addFlakeFlags(cmd, &o.Flakes)
	cmd.Flags().BoolVar(&o.Perf.AgainstBaseline, "against-baseline", false, "perf scenarios: take side A from a fitting stored baseline instead of running it")
	cmd.Flags().StringVar(&o.Perf.Baselines, "baselines", defaultBaselines, "folder of stored baselines (lab baseline)")
	cmd.Flags().Int64Var(&o.Perf.Seed, "seed", 1, "perf scenarios: bootstrap seed")
	addTreeFlags(cmd, &o.tree)
	return cmd
}

// buildFirstUsage documents --build-first wherever lab runs several kernels.
const buildFirstUsage = "build every kernel before the first run (no run shares the host with a build)"

func parseParams(kv []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range kv {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("bad parameter %q: want name=value", p)
		}
		out[k] = v
	}
	return out, nil
}

func runScenarios(cmd *cobra.Command, g *globalOptions, o *runOptions, files []string) error {
	k, n, err := parseShard(o.shard)
	if err != nil {
		return err
	}
	params, err := parseParams(o.params)
	if err != nil {
		return err
	}
	sets, err := campaign.ExpandMatrix(params, o.matrix)
	if err != nil {
		return err
	}
	if err := o.addTree(cmd, g); err != nil {
		return err
	}
	// Validate every scenario and parameter set before building or booting anything.
	plan, err := campaign.Plan(files, sets, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	return runPlan(cmd, g, o, plan, k, n)
}

// addTree writes the --tree spec and runs on it: in place of the default
// kernel, or beside those -k names.
func (o *runOptions) addTree(cmd *cobra.Command, g *globalOptions) error {
	tree, err := o.tree.set()
	if err != nil || !tree {
		return err
	}
	path, err := o.tree.specPath(cmd.Context(), g)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("kernel") {
		o.Kernels = append(o.Kernels, path)
	} else {
		o.Kernels = []string{path}
	}
	return nil
}

// runPlan runs every planned scenario on every kernel of o, shard k of n.
// Runs start as soon as their guest (kernel, flavour, image) is built,
// while the next one builds (the campaign streams them), unless --build-first;
// perf runs come after every build and every other run.
func runPlan(cmd *cobra.Command, g *globalOptions, o *runOptions, plan []campaign.Planned, k, n int) error {
	ctx := cmd.Context()
	start := time.Now()
	tw := newTallyWriter(cmd.OutOrStdout())
	defer func() { tw.summary(time.Since(start)) }()
	var out io.Writer = tw
	stderr := cmd.ErrOrStderr()
	gs := newGuests(g, o.makeJobs, stderr)
	gs.NoCover, gs.CoverFns = o.noCover, o.cover
	for _, fn := range o.cover {
		if err := kernels.CheckFunctionName(fn); err != nil {
			return err
		}
	}
	defer gs.Release()
	var err error
	if gs.Flavour, err = kernels.ParseFlavour(o.Flavour); err != nil {
		return err
	}
	if err := checkFlakes(cmd, &o.Flakes, o.Repeat > 1 || o.UntilFail); err != nil {
		return err
	}
	for _, kpath := range o.Kernels { // a bad spec fails before any build
		if _, err := kernels.LoadSpec(kpath); err != nil {
			return err
		}
	}
	groups := campaign.GroupPlan(plan, gs.GuestKey)
	if !o.BuildFirst && len(o.Kernels)*len(groups) > 1 { // builds beside runs
		var mu sync.Mutex
		out, stderr = &syncWriter{mu: &mu, w: out}, &syncWriter{mu: &mu, w: stderr}
		gs.Log = stderr // whole progress lines, not a terminal's rewritten one
		gs.Nice = campaign.BuildNice
	}
	pl := &campaign.Planner{Config: gs.Config, Options: &o.RunOptions, Groups: groups, K: k, N: n, Out: out, Log: stderr, Worst: results.Pass,
		Parallel: runner.MaxParallel(o.parallel, campaign.PlanMemory(plan))}
	worst, byGroup := pl.RunAll(ctx, func(j runner.Job, r *results.Result) { printVerdict(out, r, runDir(j, r)) })
	rc := reach{}
	for _, rs := range byGroup {
		for _, r := range rs {
			rc.add(r.Kernel.Spec, r.Coverage)
		}
	}
	defer rc.print(out)
	perf := &campaign.Perf{Options: &o.RunOptions, Config: gs.Config, Out: out, Log: stderr, Modes: campaign.ModeTable{}}
	defer perf.Modes.Print(out)
	if pl.Worst.Worse(worst) {
		worst = pl.Worst
	}
	if o.Repeat > 1 {
		printFlakes(out, byGroup)
	}
	// Perf runs come last, one guest at a time: a guest or a build beside them is noise.
	for _, j := range pl.PerfJobs() {
		if ctx.Err() != nil {
			continue
		}
		v, cov := perf.Run(ctx, j)
		rc.add(j.B.Kernel.Spec, cov)
		if v.Worse(worst) {
			worst = v
		}
	}
	if ctx.Err() != nil {
		return &exitCodeError{code: exitError, err: ctx.Err()}
	}
	if worst == results.Pass {
		return nil
	}
	return &exitCodeError{code: worst.ExitCode()}
}

// parseShard reads "K/N"; "" is the whole matrix.
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 1, 1, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("bad --shard %q: want K/N with 1 <= K <= N", s)
	}
	return k, n, nil
}

func printFlakes(w io.Writer, groups map[string][]*results.Result) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nfailure rates:")
	for _, g := range names {
		f := stats.SummariseFlakes(groups[g])
		fmt.Fprintf(w, "  %s: %s\n", g, f)
		for _, t := range f.SortedTitles() {
			fmt.Fprintf(w, "    %3d x %s\n", f.Titles[t], t)
		}
	}
}

// printVerdict writes r's verdict block in one write: builds may print beside it.
func printVerdict(w io.Writer, r *results.Result, dir string) {
	var b bytes.Buffer
	writeVerdict(&b, r, dir)
	w.Write(b.Bytes())
}

func writeVerdict(w io.Writer, r *results.Result, dir string) {
	verdict := string(r.Verdict)
	if r.Verdict == results.Pass && r.Coverage.NotExercised() {
		verdict += ", not exercised"
	}
	fmt.Fprintf(w, "%s  %s on %s (%s)  boot %.1fs, timeline %.1fs, total %.1fs\n",
		verdict, r.Scenario, r.Kernel.Spec, r.Kernel.Release, r.Timings.Boot, r.Timings.Timeline, r.Timings.Total)
	shown := map[string]bool{} // failed assertions are printed above their reason
	for _, a := range r.Asserts {
		mark := "ok  "
		switch {
		case !a.Passed && a.Unmeasured:
			mark = "n/m " // not measured: the lab's, an ERROR
			shown[a.Reason()] = true
		case !a.Passed:
			mark = "FAIL"
			shown[a.Reason()] = true
		}
		fmt.Fprintf(w, "  %s %-45s %s (want %s)\n", mark, a.Name, a.Measured, a.Bound)
	}
	for _, k := range r.Kselftests {
		mark := k.Status
		if k.Flaky() {
			mark = "flaky"
		}
		if k.Failed() {
			mark = strings.ToUpper(mark)
			shown[k.ReasonLine()] = true
		}
		line := fmt.Sprintf("  %-7s %-40s %7.1fs", mark, k.Name, k.Seconds)
		if len(k.Subtests) > 0 {
			line += "  subtests: " + results.SubtestSummary(k.Subtests)
		}
		if k.Reason != "" {
			line += "  # " + k.Reason
		}
		fmt.Fprintln(w, line)
	}
	if len(r.Kselftests) > 0 {
		fmt.Fprintf(w, "  kselftests: %s\n", results.KselftestSummary(r.Kselftests))
	}
	for _, in := range r.Injections {
		fmt.Fprintf(w, "  inject %-10s at %s (%s): %d runs, %d delays of %s", in.Name, in.At, in.On, in.Hits, in.Fired, in.Delay)
		if in.Warning != "" {
			fmt.Fprintf(w, "  WARNING: %s", in.Warning)
		}
		fmt.Fprintln(w)
	}
	if line := campaign.CoverageLine(r.Coverage); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	for _, l := range r.Loads {
		fmt.Fprintf(w, "  load %-12s sent %d, received %d, longest gap %d ms", l.Name, l.Sent, l.Received, l.MaxGapMs)
		if l.Latency != nil {
			fmt.Fprintf(w, ", latency p50 %.0fus p99 %.0fus p99.9 %.0fus", l.Latency.P50, l.Latency.P99, l.Latency.P999)
		}
		if l.XSK != "" {
			fmt.Fprintf(w, "; %s", l.XSK)
		}
		fmt.Fprintln(w)
	}
	for _, reason := range r.Reasons {
		if !shown[reason] {
			fmt.Fprintf(w, "  %s\n", reason)
		}
	}
	printFlaky(w, r)
	if r.Dropped != nil {
		fmt.Fprintf(w, "  %s\n", r.Dropped)
	}
	fmt.Fprintf(w, "  run folder: %s\n", dir)
}
