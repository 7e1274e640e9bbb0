package campaign

import (
	"context"

	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// ConfigFunc gives the guest part of a scenario's run configuration on the
// kernel spec at kpath, building what it needs (Guests.Config; a fake in tests).
type ConfigFunc func(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error)

// Interleaver runs arms in turn, runs from..to of each (runner.Interleave;
// a fake in tests).
type Interleaver func(ctx context.Context, arms []runner.Arm, dir string, from, to int, each func(runner.Arm, int, *results.Result)) (map[string][]*results.Result, error)

// interleave is f, or runner.Interleave when f is nil.
func (f Interleaver) interleave(ctx context.Context, arms []runner.Arm, dir string, from, to int, each func(runner.Arm, int, *results.Result)) (map[string][]*results.Result, error) {
	if f == nil {
		return runner.Interleave(ctx, arms, dir, from, to, each)
	}
	return f(ctx, arms, dir, from, to, each)
}
