package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"napilab/images"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

type runOptions struct {
	kernel string
	params []string
	out    string
	accel  string
	jobs   int
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
	cmd.Flags().StringVarP(&o.kernel, "kernel", "k", "kernels/stock-6.1.yaml", "kernel spec")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value (repeatable)")
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
	// Validate every scenario before building or booting anything.
	var ss []*scenarios.Scenario
	for _, f := range files {
		s, err := scenarios.Open(f, params)
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	stderr := cmd.ErrOrStderr()
	k, spec, err := buildKernel(ctx, g, o.kernel, o.jobs, progressWriter(stderr, false))
	if err != nil {
		return err
	}
	img, err := images.Build(ctx, images.Options{CacheDir: g.cache()})
	if err != nil {
		return err
	}
	worst := results.Pass
	for _, s := range ss {
		dir := filepath.Join(o.out, fmt.Sprintf("%s-%s-%s", time.Now().Format("20060102-150405"), s.Name, spec.Name))
		res := runner.Run(ctx, runner.Config{
			Scenario: s, Kernel: results.Kernel{Spec: spec.Name, Key: k.Key, BzImage: k.BzImage}, Cmdline: spec.Cmdline,
			Initramfs: img.Path, ImageHash: img.Hash, OutDir: dir, Accel: o.accel,
			Logf: func(f string, a ...any) { fmt.Fprintf(stderr, "  "+f+"\n", a...) },
		})
		printVerdict(cmd.OutOrStdout(), res, dir)
		if res.Verdict.ExitCode() > worst.ExitCode() {
			worst = res.Verdict
		}
		if ctx.Err() != nil {
			break
		}
	}
	if worst == results.Pass {
		return nil
	}
	return &exitCodeError{code: worst.ExitCode()}
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
	for _, reason := range r.Reasons {
		if !strings.Contains(reason, "measured") {
			fmt.Fprintf(w, "  %s\n", reason)
		}
	}
	fmt.Fprintf(w, "  run folder: %s\n", dir)
}
