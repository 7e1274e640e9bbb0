package runner

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"napilab/results"
	"napilab/results/stats"
)

// Arm is one side of a comparison: a kernel and scenario parameters.
type Arm struct {
	Label string // how tables name it: the kernel spec, plus parameters when they differ
	Tag   string // run folder prefix: a or b
	Cfg   Config
}

// Interleave runs the arms repeat times in the order A B A B …, so slow
// drifts of the host (other load, caches, thermal) fall on both alike (one
// arm: a series of runs, as for a stored baseline).
// Runs are numbered from..to (1..repeat for a fresh series); each gets
// outDir/<tag>-<i>. It stops when ctx ends or a run is an ERROR of the lab
// itself.
func Interleave(ctx context.Context, arms []Arm, outDir string, from, to int, each func(a Arm, i int, r *results.Result)) (map[string][]*results.Result, error) {
	runs := map[string][]*results.Result{}
	for i := from; i <= to; i++ {
		for _, arm := range arms {
			cfg := arm.Cfg
			cfg.OutDir = filepath.Join(outDir, fmt.Sprintf("%s-%d", arm.Tag, i))
			r := Run(ctx, cfg)
			runs[arm.Label] = append(runs[arm.Label], r)
			if each != nil {
				each(arm, i, r)
			}
			if ctx.Err() != nil {
				return runs, ctx.Err()
			}
			if r.Verdict == results.Error {
				return runs, fmt.Errorf("run %s-%d (%s): %v", arm.Tag, i, arm.Label, r.Reasons)
			}
		}
	}
	return runs, nil
}

// Samples turns each arm's figures into comparison samples, metrics in
// name order (the table keeps the order of first appearance). A who-polled
// figure some run lacks is 0 in it when it recorded who polled
// (results.Result.FigureValue): runs keep only the contexts they saw.
func Samples(runs map[string][]*results.Result) []stats.Sample {
	names := map[string]bool{}
	for _, rs := range runs {
		for _, r := range rs {
			for name := range r.Figures {
				names[name] = true
			}
		}
	}
	var out []stats.Sample
	for _, label := range slices.Sorted(maps.Keys(runs)) {
		for i, r := range runs[label] {
			for _, name := range slices.Sorted(maps.Keys(names)) {
				if v, ok := r.FigureValue(name); ok {
					out = append(out, stats.Sample{Metric: name, Kernel: label, Run: i + 1, Value: v})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Metric < out[j].Metric })
	return out
}
