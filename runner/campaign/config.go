package campaign

import (
	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// GuestConfig is the part of a run's configuration that comes from the built
// kernel (at specPath) and the image; callers add the scenario and the rest.
func GuestConfig(specPath string, spec *kernels.Spec, k *kernels.Artifact, img *images.Image) runner.Config {
	// The release is the build's until the guest reports its uname -r.
	cfg := runner.Config{Kernel: results.Kernel{Spec: spec.Name, Flavour: spec.Flavour().String(), Key: k.Key, BzImage: k.BzImage, Release: k.Release()}, KernelSpec: specPath,
		Cmdline: spec.Cmdline, Initramfs: img.Path, ImageHash: img.Hash}
	if src := k.Info.Source; src != nil {
		cfg.Kernel.Commit, cfg.Kernel.Dirty = src.Commit, src.Dirty
	}
	return cfg
}

// ForKernel returns the scenario with the parameters its flavours: block
// sets for the flavour the kernel of cfg was built as (the user's params win).
func ForKernel(cfg runner.Config, s *scenarios.Scenario, params map[string]string) (*scenarios.Scenario, map[string]string, error) {
	fl, err := kernels.ParseFlavour(cfg.Kernel.Flavour)
	if err != nil || !fl.Debug {
		return s, params, err
	}
	return s.ForFlavour(scenarios.FlavourDebug, params)
}

// skippedOn says why the scenario does not run on the flavour of cfg's kernel.
func skippedOn(cfg runner.Config, s *scenarios.Scenario) string {
	if fl, _ := kernels.ParseFlavour(cfg.Kernel.Flavour); fl.Debug {
		return s.SkippedOn(scenarios.FlavourDebug)
	}
	return ""
}
