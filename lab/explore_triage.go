package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
	"napilab/scenarios"
	"napilab/scenarios/explore"
)

type triageOptions struct {
	kernels  []string
	runs     int
	out      string
	makeJobs int
	flavour  string
}

func newTriageCmd(g *globalOptions) *cobra.Command {
	o := &triageOptions{}
	cmd := &cobra.Command{
		Use:   "triage FINDING --kernel SPEC...",
		Short: "Run a finding's reproducer on other kernels: which have it (a base, a fix)",
		Long: `triage runs FINDING/minimized.yaml (a folder lab explore wrote) --runs times on
each kernel and says on which it FAILs with the finding's title: the bases
that have the bug, and whether a fix removes it. A kernel too old for the
program's knobs is a SKIP. The kernels are built in the finding's flavour
(a debug finding on the debug flavour, with the program's debug parameters)
unless --flavour says otherwise. Exit code 1 when any kernel has it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return triage(cmd, g, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.kernels, "kernel", "k", nil, "kernel spec (repeatable)")
	f.IntVar(&o.runs, "runs", 3, "runs of the reproducer on each kernel")
	f.StringVarP(&o.out, "out", "o", "", "folder for the run folders (default FINDING/triage)")
	f.IntVar(&o.makeJobs, "make-jobs", 0, "make -j for kernel builds (0: the CPUs)")
	f.StringVar(&o.flavour, "flavour", "", flavourUsage+" (default: the finding's)")
	cmd.MarkFlagRequired("kernel")
	return cmd
}

func triage(cmd *cobra.Command, g *globalOptions, o *triageOptions, dir string) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var f explore.Finding
	data, err := explore.ReadFinding(filepath.Join(dir, "finding.json"))
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		return fmt.Errorf("%s is not a finding folder of lab explore: %w", dir, err)
	}
	path := filepath.Join(dir, "minimized.yaml")
	s, err := scenarios.Open(path, nil)
	if err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join(dir, "triage")
	}
	gs := newGuests(g, o.makeJobs, stderr)
	gs.NoCover = true
	defer gs.Release()
	if !cmd.Flags().Changed("flavour") {
		o.flavour = f.Flavour
	}
	if gs.Flavour, err = kernels.ParseFlavour(o.flavour); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s)\n", f.Title, path)
	has := false
	for _, k := range o.kernels {
		spec, err := kernels.LoadSpec(k)
		if err != nil {
			return err
		}
		cfg, err := gs.Config(ctx, k, s)
		if err != nil {
			fmt.Fprintf(stdout, "  %-28s ERROR: %v\n", spec.Name, err)
			continue
		}
		if why := s.Unsupported(cfg.Kernel.Release); why != "" {
			fmt.Fprintf(stdout, "  %-28s SKIP (%s): %s\n", spec.Name, cfg.Kernel.Release, why)
			continue
		}
		// A debug kernel's parameters, as lab explore and lab run give them.
		ks, _, err := campaign.ForKernel(cfg, s, nil)
		if err != nil {
			return err
		}
		counts := map[string]int{}
		same := 0
		for i := range o.runs {
			rd, err := results.NewRunDir(o.out, fmt.Sprintf("%s#%d", spec.Name, i+1))
			if err != nil {
				return err
			}
			cfg.Scenario, cfg.OutDir = ks, rd
			r := runner.Run(ctx, cfg)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			counts[string(r.Verdict)]++
			if r.Verdict == results.Fail && dedupTitle(r) == f.Title {
				same++
			}
		}
		line := fmt.Sprintf("has it: FAIL %d/%d with this title", same, o.runs)
		if same == 0 {
			line = fmt.Sprintf("not seen in %d runs", o.runs)
		}
		has = has || same > 0
		_, seen := verdictCounts(counts)
		fmt.Fprintf(stdout, "  %-28s %s (%s)  %s\n", spec.Name, cfg.Kernel.Release, seen, line)
	}
	if has {
		return &exitCodeError{code: exitFail}
	}
	return nil
}
