package campaign

import (
	"context"
	"strings"

	"napilab/runner"
	"napilab/scenarios"
)

// Arm resolves one side of an A/B measurement: the scenario at file with
// params on the kernel spec at kpath, as its flavour runs it; own are the
// parameters ("name=value") only this side sets, named in its label.
func (gs *Guests) Arm(ctx context.Context, kpath, file string, params map[string]string, own []string, accel, tag string) (runner.Arm, error) {
	s, err := scenarios.Open(file, params)
	if err != nil {
		return runner.Arm{}, err
	}
	cfg, err := gs.Config(ctx, kpath, s)
	if err != nil {
		return runner.Arm{}, err
	}
	if s, params, err = ForKernel(cfg, s, params); err != nil {
		return runner.Arm{}, err
	}
	label := cfg.Kernel.Spec
	if len(own) > 0 {
		label += " " + strings.Join(own, " ")
	}
	cfg.Scenario, cfg.Accel, cfg.Params = s, accel, params
	return runner.Arm{Label: label, Tag: tag, Cfg: cfg}, nil
}
