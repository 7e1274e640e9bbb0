package main

import (
	"encoding/json"
	"fmt"
	"napilab/kernels"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

type reproOptions struct {
	out string
}

func newReproCmd(g *globalOptions) *cobra.Command {
	o := &reproOptions{}
	cmd := &cobra.Command{
		Use:   "repro RUN_FOLDER",
		Short: "Run a recorded run again: same kernel (by content key), image, resolved scenario and seed",
		Long: `Reads replay.json and scenario.yaml from the run folder, rebuilds the kernel from its spec if the
cache lacks it (and refuses when the spec's inputs no longer give the recorded content key), rebuilds
the image, runs the resolved scenario with the recorded seed, and says whether the failure title is
the same. Exit codes as lab run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return repro(cmd, g, o, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the new run folder")
	return cmd
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func repro(cmd *cobra.Command, g *globalOptions, o *reproOptions, dir string) error {
	ctx := cmd.Context()
	var rp results.Replay
	if err := readJSON(filepath.Join(dir, "replay.json"), &rp); err != nil {
		return fmt.Errorf("not a replayable run folder: %w", err)
	}
	orig, err := results.Read(filepath.Join(dir, "result.json"))
	if err != nil {
		return err
	}
	s, err := scenarios.Open(filepath.Join(dir, "scenario.yaml"), nil)
	if err != nil {
		return err
	}
	gs := newGuests(g, 0, cmd.ErrOrStderr())
	if gs.flavour, err = kernels.ParseFlavour(rp.Flavour); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "replay.json"), err)
	}
	cfg, err := gs.config(ctx, rp.KernelSpec, s)
	if err != nil {
		return err
	}
	if key := cfg.Kernel.Key; key != rp.KernelKey {
		return &exitCodeError{code: exitError, err: fmt.Errorf("kernel %s now builds as %s, the run used %s: its spec, patches or compiler changed", cfg.Kernel.Spec, key[:16], rp.KernelKey[:min(16, len(rp.KernelKey))])}
	}
	if cfg.ImageHash != rp.ImageHash {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: the guest image changed since the run (agent code): %s, was %s\n", cfg.ImageHash[:16], rp.ImageHash[:min(16, len(rp.ImageHash))])
	}
	out := filepath.Join(o.out, fmt.Sprintf("%s-repro-%s", time.Now().Format("20060102-150405"), filepath.Base(dir)))
	cfg.Scenario, cfg.OutDir, cfg.Accel, cfg.Params, cfg.Seed = s, out, rp.Accel, rp.Params, rp.Seed
	res := runner.Run(ctx, cfg)
	printVerdict(cmd.OutOrStdout(), res, out)
	was, now := orig.Title(), res.Title()
	switch {
	case was == now && was != "":
		fmt.Fprintf(cmd.OutOrStdout(), "reproduced: %s\n", now)
	case was == "":
		fmt.Fprintf(cmd.OutOrStdout(), "the original run passed; this one: %s\n", res.Verdict)
	default:
		fmt.Fprintf(cmd.OutOrStdout(), "not reproduced: the run failed with %q, this one %q\n", was, now)
	}
	if res.Verdict == results.Pass {
		return nil
	}
	return &exitCodeError{code: res.Verdict.ExitCode()}
}
