package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
)

type reproOptions struct {
	out    string
	kernel string // a spec the user names, trusted in place of replay.json's
}

func newReproCmd(g *globalOptions) *cobra.Command {
	o := &reproOptions{}
	cmd := &cobra.Command{
		Use:   "repro RUN_FOLDER",
		Short: "Run a recorded run again: same kernel (by content key), image, resolved scenario and seed",
		Long: `Reads replay.json and scenario.yaml (the resolved scenario, includes merged) from the run folder.
When the cache holds the recorded kernel (by content key) it is used as is: the spec must still give
that key, nothing is built. Otherwise the kernel is built from its spec and refused when the spec's
inputs no longer give the recorded key. replay.json's spec is trusted only under kernels/; name any
other with --kernel. Its QEMU command line is never run: the run's QEMU is built afresh. It rebuilds
the image, runs the scenario with the recorded seed and says whether the failure title is the same.
Exit codes as lab run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return repro(cmd, g, o, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the new run folder")
	cmd.Flags().StringVarP(&o.kernel, "kernel", "k", "", "kernel spec to use instead of replay.json's (needed when that is outside kernels/)")
	return cmd
}

// specsDir is the project's kernel specs folder (lab runs from the project root).
const specsDir = "kernels"

func repro(cmd *cobra.Command, g *globalOptions, o *reproOptions, dir string) error {
	rp, err := campaign.ReadReplay(dir)
	if err != nil {
		return err
	}
	kpath, err := campaign.ReproSpec(o.kernel, rp, g.cache(), specsDir)
	if err != nil {
		return err
	}
	gs := newGuests(g, 0, cmd.ErrOrStderr())
	rep, err := gs.Repro(cmd.Context(), dir, kpath, rp)
	if errors.Is(err, campaign.ErrKernelChanged) {
		return &exitCodeError{code: exitError, err: err}
	}
	if err != nil {
		return err
	}
	out, err := results.NewRunDir(o.out, "repro-"+filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return err
	}
	cfg := rep.Cfg
	cfg.OutDir = out
	res := runner.Run(cmd.Context(), cfg)
	printVerdict(cmd.OutOrStdout(), res, out)
	fmt.Fprintln(cmd.OutOrStdout(), rep.Verdict(res))
	if res.Verdict == results.Pass {
		return nil
	}
	return &exitCodeError{code: res.Verdict.ExitCode()}
}
