package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"napilab/images"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

type runOptions struct {
	kernels []string
	params  []string
	matrix  []string
	out     string
	accel   string
	jobs    int
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run SCENARIO... --kernel SPEC",
		Short: "Boot a kernel and run scenarios; exit 0 PASS, 1 FAIL, 2 ERROR",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarios(cmd, g, o, args)
		},
	}
	cmd.Flags().StringArrayVarP(&o.kernels, "kernel", "k", []string{"kernels/stock-6.1.yaml"}, "kernel spec (repeatable: every scenario runs on each)")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value (repeatable)")
	cmd.Flags().StringArrayVar(&o.matrix, "matrix", nil, "run once per value: name=v1,v2,... (repeatable: the cross product)")
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for run folders")
	cmd.Flags().StringVar(&o.accel, "accel", "", "kvm or tcg (default tcg, or $NAPILAB_ACCEL)")
	cmd.Flags().IntVarP(&o.jobs, "jobs", "j", 0, "make -j for a kernel build")
	return cmd
}

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
	ctx := cmd.Context()
	params, err := parseParams(o.params)
	if err != nil {
		return err
	}
	sets, err := expandMatrix(params, o.matrix)
	if err != nil {
		return err
	}
	// Validate every scenario and parameter set before building or booting anything.
	type job struct {
		s      *scenarios.Scenario
		params map[string]string
	}
	var jobs []job
	for _, f := range files {
		for _, p := range sets {
			s, err := scenarios.Open(f, p)
			if err != nil {
				return err
			}
			jobs = append(jobs, job{s, p})
		}
	}
	stderr := cmd.ErrOrStderr()
	worst := results.Pass
	for _, kpath := range o.kernels {
		k, spec, err := buildKernel(ctx, g, kpath, o.jobs, progressWriter(stderr, false))
		if err != nil {
			return err
		}
		img, err := images.Build(ctx, images.Options{CacheDir: g.cache()})
		if err != nil {
			return err
		}
		for _, j := range jobs {
			s, params := j.s, j.params
			dir := filepath.Join(o.out, fmt.Sprintf("%s-%s-%s%s", time.Now().Format("20060102-150405"), s.Name, spec.Name, paramSuffix(params)))
			res := runner.Run(ctx, runner.Config{
				Scenario: s, Kernel: results.Kernel{Spec: spec.Name, Key: k.Key, BzImage: k.BzImage}, Cmdline: spec.Cmdline,
				Initramfs: img.Path, ImageHash: img.Hash, OutDir: dir, Accel: o.accel, Params: params,
				Logf: func(f string, a ...any) { fmt.Fprintf(stderr, "  "+f+"\n", a...) },
			})
			printVerdict(cmd.OutOrStdout(), res, dir)
			if res.Verdict.ExitCode() > worst.ExitCode() {
				worst = res.Verdict
			}
			if ctx.Err() != nil {
				return &exitCodeError{code: exitError, err: ctx.Err()}
			}
		}
	}
	if worst == results.Pass {
		return nil
	}
	return &exitCodeError{code: worst.ExitCode()}
}

// expandMatrix returns one parameter set per combination of matrix values,
// each on top of the fixed params.
func expandMatrix(fixed map[string]string, matrix []string) ([]map[string]string, error) {
	sets := []map[string]string{fixed}
	for _, m := range matrix {
		name, vals, ok := strings.Cut(m, "=")
		if !ok || name == "" || vals == "" {
			return nil, fmt.Errorf("bad --matrix %q: want name=v1,v2", m)
		}
		var next []map[string]string
		for _, set := range sets {
			for _, v := range strings.Split(vals, ",") {
				p := map[string]string{}
				for k, x := range set {
					p[k] = x
				}
				p[name] = v
				next = append(next, p)
			}
		}
		sets = next
	}
	return sets, nil
}

// paramSuffix names a run folder after its parameters.
func paramSuffix(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "-%s=%s", k, strings.ReplaceAll(p[k], "/", "_"))
	}
	return b.String()
}

func printVerdict(w io.Writer, r *results.Result, dir string) {
	fmt.Fprintf(w, "%s  %s on %s (%s)  boot %.1fs, timeline %.1fs, total %.1fs\n",
		r.Verdict, r.Scenario, r.Kernel.Spec, r.Kernel.Release, r.Timings.Boot, r.Timings.Timeline, r.Timings.Total)
	for _, a := range r.Asserts {
		mark := "ok  "
		if !a.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-45s %s (want %s)\n", mark, a.Name, a.Measured, a.Bound)
	}
	for _, l := range r.Loads {
		fmt.Fprintf(w, "  load %-12s sent %d, received %d, longest gap %d ms", l.Name, l.Sent, l.Received, l.MaxGapMs)
		if l.Latency != nil {
			fmt.Fprintf(w, ", latency p50 %.0fus p99 %.0fus p99.9 %.0fus", l.Latency.P50, l.Latency.P99, l.Latency.P999)
		}
		fmt.Fprintln(w)
	}
	for _, reason := range r.Reasons {
		if !strings.Contains(reason, "measured") {
			fmt.Fprintf(w, "  %s\n", reason)
		}
	}
	fmt.Fprintf(w, "  run folder: %s\n", dir)
}
