package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"napilab/internal/safefs"
	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// maxReplaySize bounds replay.json.
const maxReplaySize = 1 << 20

// ErrKernelChanged says a recorded run's kernel no longer builds as it did:
// its spec, patches or compiler changed (lab repro's ERROR).
var ErrKernelChanged = errors.New("the kernel changed")

// Repro is a recorded run made ready to run again: the configuration of
// its kernel (by content key), image, resolved scenario and seed.
type Repro struct {
	Replay   *results.Replay
	Original *results.Result     // what the run said
	Scenario *scenarios.Scenario // the resolved copy it saved, not replay.json's path
	Cfg      runner.Config       // all but OutDir
}

// ReadReplay reads and checks a run folder's replay.json. Fields are data:
// the spec path is checked by ReproSpec, the QEMU line is never run.
func ReadReplay(dir string) (*results.Replay, error) {
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

// ReproSpec picks the spec a repro builds: given (the user's --kernel) as
// it is, else replay.json's when it lies under specsDir or the cache's
// ad-hoc specs (lab --tree), symlinks resolved.
func ReproSpec(given string, rp *results.Replay, cacheDir, specsDir string) (string, error) {
	if given != "" {
		return given, nil
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

// Repro prepares the run recorded in dir: the kernel from the cache when
// it holds the recorded key (then nothing is built, and the spec at kpath
// must still give that key), otherwise built from kpath and refused unless
// it gives the recorded key (ErrKernelChanged). It says on gs.Log what it
// uses.
func (gs *Guests) Repro(ctx context.Context, dir, kpath string, rp *results.Replay) (*Repro, error) {
	// The key is checked against the cache before any spec is built.
	cached, err := kernels.FindKey(gs.CacheDir, rp.KernelKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "replay.json"), err)
	}
	orig, err := results.Read(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	spath := filepath.Join(dir, "scenario.yaml")
	s, err := scenarios.Open(spath, nil)
	if err != nil {
		return nil, err
	}
	log := gs.Log
	fmt.Fprintf(log, "scenario: %s (the resolved copy saved by the run; replay.json's %s is not read)\n", spath, rp.Scenario)
	gs.Flavour, _ = kernels.ParseFlavour(rp.Flavour)
	if rp.Commit != "" && rp.Dirty == "" {
		// The commit, not wherever the tree or branch is now.
		gs.Commit = rp.Commit
		fmt.Fprintf(log, "kernel source: commit %s of the spec's tree\n", rp.Commit)
	} else if rp.Dirty != "" {
		fmt.Fprintf(log, "kernel source: commit %s with uncommitted changes (tree %.12s): the tree must still hold them\n", rp.Commit, rp.Dirty)
	}
	if cached != nil {
		gs.CacheOnly = true
		fmt.Fprintf(log, "kernel: %s from the cache (key %s), spec %s\n", cached.Dir, rp.KernelKey[:16], kpath)
	} else {
		fmt.Fprintf(log, "kernel: key %s is not in the cache: building spec %s\n", rp.KernelKey[:16], kpath)
	}
	cfg, err := gs.Config(ctx, kpath, s)
	if errors.Is(err, kernels.ErrNotCached) {
		return nil, fmt.Errorf("%w: spec %s no longer gives the cached kernel %s: its spec, patches or compiler changed", ErrKernelChanged, kpath, rp.KernelKey[:16])
	}
	if err != nil {
		return nil, err
	}
	if key := cfg.Kernel.Key; key != rp.KernelKey {
		return nil, fmt.Errorf("%w: kernel %s now builds as %s, the run used %s: its spec, patches or compiler changed", ErrKernelChanged, cfg.Kernel.Spec, key[:min(16, len(key))], rp.KernelKey[:16])
	}
	if cfg.ImageHash != rp.ImageHash {
		fmt.Fprintf(log, "note: the guest image changed since the run (agent code): %s, was %.16s\n", cfg.ImageHash[:min(16, len(cfg.ImageHash))], rp.ImageHash)
	}
	cfg.Scenario, cfg.Accel, cfg.Params, cfg.Seed = s, rp.Accel, rp.Params, rp.Seed
	return &Repro{Replay: rp, Original: orig, Scenario: s, Cfg: cfg}, nil
}

// Verdict says how a repro's run compares with the recorded one.
func (r *Repro) Verdict(res *results.Result) string {
	was, now := r.Original.Title(), res.Title()
	switch {
	case was == now && was != "":
		return "reproduced: " + now
	case was == "":
		return fmt.Sprintf("the original run passed; this one: %s", res.Verdict)
	}
	return fmt.Sprintf("not reproduced: the run failed with %q, this one %q", was, now)
}
