package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"napilab/internal/safefs"
	"napilab/kernels"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
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

// maxReplaySize bounds replay.json.
const maxReplaySize = 1 << 20

// readReplay reads and checks a run folder's replay.json. Fields are data:
// the spec path is checked by reproSpec, the QEMU line is never run.
func readReplay(dir string) (*results.Replay, error) {
	path := filepath.Join(dir, "replay.json")
	b, err := safefs.ReadRegular(path, maxReplaySize)
	if err != nil {
		return nil, fmt.Errorf("not a replayable run folder: %w", err)
	}
	var rp results.Replay
	if err := json.Unmarshal(b, &rp); err != nil {
		return nil, fmt.Errorf("not a replayable run folder: %s: %w", path, err)
	}
	switch rp.Accel {
	case "", "tcg", "kvm":
	default:
		return nil, fmt.Errorf("%s: accel %q: want kvm or tcg", path, rp.Accel)
	}
	if _, err := kernels.ParseFlavour(rp.Flavour); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rp, nil
}

// reproSpec picks the spec to use: --kernel as given, else replay.json's
// when it lies under specsDir or the cache's ad-hoc specs (lab --tree),
// symlinks resolved.
func reproSpec(o *reproOptions, rp *results.Replay, cacheDir string) (string, error) {
	if o.kernel != "" {
		return o.kernel, nil
	}
	p, err := filepath.EvalSymlinks(rp.KernelSpec)
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err != nil {
		return "", fmt.Errorf("replay.json's kernel spec: %w (pass one with --kernel)", err)
	}
	if within(kernels.SpecsDir(cacheDir), p) {
		return rp.KernelSpec, nil
	}
	root, err := filepath.EvalSymlinks(specsDir)
	if err == nil {
		root, err = filepath.Abs(root)
	}
	if err != nil {
		return "", fmt.Errorf("replay.json names kernel spec %s and there is no %s/ folder here: run from the project root or pass --kernel", rp.KernelSpec, specsDir)
	}
	if !within(root, p) {
		return "", fmt.Errorf("replay.json names kernel spec %s, outside %s: pass it with --kernel if you trust it", rp.KernelSpec, root)
	}
	return rp.KernelSpec, nil
}

// within reports whether the absolute, resolved path p lies under dir.
func within(dir, p string) bool {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func repro(cmd *cobra.Command, g *globalOptions, o *reproOptions, dir string) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	rp, err := readReplay(dir)
	if err != nil {
		return err
	}
	kpath, err := reproSpec(o, rp, g.cache())
	if err != nil {
		return err
	}
	// The key is checked against the cache before any spec is built.
	cached, err := kernels.FindKey(g.cache(), rp.KernelKey)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "replay.json"), err)
	}
	orig, err := results.Read(filepath.Join(dir, "result.json"))
	if err != nil {
		return err
	}
	// The resolved copy, not replay.json's scenario path: it is what ran.
	spath := filepath.Join(dir, "scenario.yaml")
	s, err := scenarios.Open(spath, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "scenario: %s (the resolved copy saved by the run; replay.json's %s is not read)\n", spath, rp.Scenario)
	gs := newGuests(g, 0, stderr)
	gs.Flavour, _ = kernels.ParseFlavour(rp.Flavour)
	if rp.Commit != "" && rp.Dirty == "" {
		// The commit, not wherever the tree or branch is now.
		gs.Commit = rp.Commit
		fmt.Fprintf(stderr, "kernel source: commit %s of the spec's tree\n", rp.Commit)
	} else if rp.Dirty != "" {
		fmt.Fprintf(stderr, "kernel source: commit %s with uncommitted changes (tree %.12s): the tree must still hold them\n", rp.Commit, rp.Dirty)
	}
	if cached != nil {
		gs.CacheOnly = true
		fmt.Fprintf(stderr, "kernel: %s from the cache (key %s), spec %s\n", cached.Dir, rp.KernelKey[:16], kpath)
	} else {
		fmt.Fprintf(stderr, "kernel: key %s is not in the cache: building spec %s\n", rp.KernelKey[:16], kpath)
	}
	cfg, err := gs.Config(ctx, kpath, s)
	if errors.Is(err, kernels.ErrNotCached) {
		return &exitCodeError{code: exitError, err: fmt.Errorf("spec %s no longer gives the cached kernel %s: its spec, patches or compiler changed", kpath, rp.KernelKey[:16])}
	}
	if err != nil {
		return err
	}
	if key := cfg.Kernel.Key; key != rp.KernelKey {
		return &exitCodeError{code: exitError, err: fmt.Errorf("kernel %s now builds as %s, the run used %s: its spec, patches or compiler changed", cfg.Kernel.Spec, key[:min(16, len(key))], rp.KernelKey[:16])}
	}
	if cfg.ImageHash != rp.ImageHash {
		fmt.Fprintf(stderr, "note: the guest image changed since the run (agent code): %s, was %.16s\n", cfg.ImageHash[:min(16, len(cfg.ImageHash))], rp.ImageHash)
	}
	out, err := results.NewRunDir(o.out, "repro-"+filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return err
	}
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
