package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"napilab/kernels"
	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
	"napilab/scenarios"
)

// errOwnBaseline: the kernel under test is the perf scenario's baseline, so
// there is nothing to compare.
var errOwnBaseline = errors.New("the kernel is its own baseline")

// sideA is what side B is measured against: the baseline kernel's runs, or
// the samples of a stored baseline.
type sideA struct {
	label string
	arms  []runner.Arm    // A's arm; none when saved stands for it
	saved *stats.Baseline // the stored baseline that stands for A
}

// samples are the comparison samples of the runs, with the stored
// baseline's as A's when one stands for it.
func (a sideA) samples(runs map[string][]*results.Result) []stats.Sample {
	samples := runner.Samples(runs)
	if a.saved != nil {
		for _, x := range a.saved.Samples {
			x.Kernel = a.label
			samples = append(samples, x)
		}
	}
	return samples
}

// sideA resolves side A of j on this host: a stored baseline that fits, or
// the baseline kernel's arm. skip says why there is nothing to compare.
func (p *Perf) sideA(ctx context.Context, j PerfJob, name string, host stats.Host) (a sideA, skip string, err error) {
	s, o := j.Scenario, p.Options.Perf
	aPath, stored, err := baselineKernel(s, j.KPath)
	if errors.Is(err, errOwnBaseline) {
		return a, err.Error(), nil
	}
	if err != nil {
		return a, "", err
	}
	var list []*stats.Baseline
	if stored != "" || o.AgainstBaseline {
		if list, err = stats.LoadBaselines(o.Baselines); err != nil {
			return a, "", err
		}
	}
	if stored != "" {
		var why []string
		for _, b := range list {
			if b.Name == stored {
				a.saved, why = stats.FindBaseline([]*stats.Baseline{b}, stored, b.Kernel.Key, s.MeasureHash, host)
			}
		}
		if a.saved == nil {
			if why == nil {
				why = []string{fmt.Sprintf("no stored baseline %q in %s (lab baseline list)", stored, o.Baselines)}
			}
			return a, "", fmt.Errorf("perf.baseline %s does not fit: %s", stored, strings.Join(why, "; "))
		}
		a.label = a.saved.Kernel.Spec + " (stored " + a.saved.Name + ")"
		return a, "", nil
	}
	cfg, err := p.Config(ctx, aPath, s)
	if err != nil {
		return a, "", fmt.Errorf("baseline kernel %s: %v", aPath, err)
	}
	if cfg.Kernel.Key == j.B.Kernel.Key {
		return a, fmt.Sprintf("%v (%s has the same content key)", errOwnBaseline, aPath), nil
	}
	cfg.Scenario, cfg.Accel, cfg.Params, cfg.NoPolls = j.B.Scenario, j.B.Accel, j.B.Params, j.B.NoPolls
	cfg.Cover = nil
	a.label = cfg.Kernel.Spec
	if o.AgainstBaseline {
		var why []string
		a.saved, why = stats.FindBaseline(list, "", cfg.Kernel.Key, s.MeasureHash, host)
		if a.saved != nil {
			a.label += " (stored " + a.saved.Name + ")"
		} else {
			fmt.Fprintf(p.Log, "%s: no fitting stored baseline in %s, running %s: %s\n", name, o.Baselines, cfg.Kernel.Spec, orNone(why))
		}
	}
	if a.saved == nil {
		a.arms = []runner.Arm{{Label: a.label, Tag: "a", Cfg: cfg}}
	}
	return a, "", nil
}

// baselineKernel resolves perf.baseline for the kernel spec at kpath: the
// spec of side A, or the name of a stored baseline.
func baselineKernel(s *scenarios.Scenario, kpath string) (spec, stored string, err error) {
	want := s.Perf.Baseline
	switch {
	case want == "" || want == "base":
		k, err := kernels.LoadSpec(kpath)
		if err != nil {
			return "", "", err
		}
		if k.Extends == "" {
			return "", "", fmt.Errorf("%w: %s extends no spec, so perf.baseline %q has nothing to compare it with", errOwnBaseline, k.Name, "base")
		}
		return k.Extends, "", nil
	case strings.HasSuffix(want, ".yaml"):
		if filepath.IsAbs(want) || fileExists(want) {
			return want, "", nil
		}
		// Shipped scenarios name specs from the project's top, as the README does.
		p := filepath.Join(filepath.Dir(scenarios.Shipped(s.Path)), want)
		if fileExists(p) {
			return p, "", nil
		}
		return "", "", fmt.Errorf("%s: perf.baseline %s: no such kernel spec here or at %s", s.Path, want, p)
	}
	return "", want, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func orNone(why []string) string {
	if len(why) == 0 {
		return "none recorded"
	}
	return strings.Join(why, "; ")
}
