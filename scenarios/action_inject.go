package scenarios

import (
	"context"
	"fmt"
	"time"

	"napilab/internal/wire"
)

// InjectStep arms or disarms a probe from the timeline.
type InjectStep struct {
	Name string `yaml:"name"`
	On   *bool  `yaml:"armed"` // unset = toggle each repetition, starting with off
}

// check has nothing to do: injects checks the probe name with the probes.
func (x *InjectStep) check(*checker, *Step) {}

func (x *InjectStep) explain() (time.Duration, string) {
	switch {
	case x.On == nil:
		return 0, fmt.Sprintf("disarm, then arm inject probe %s", x.Name)
	case *x.On:
		return 0, "arm inject probe " + x.Name
	}
	return 0, "disarm inject probe " + x.Name
}

func (x *InjectStep) label() string { return "inject" }

// value is on or off; a toggle starts with off.
func (x *InjectStep) value(i int) string {
	if x.On != nil && *x.On || x.On == nil && i%2 == 1 {
		return "on"
	}
	return "off"
}

func (x *InjectStep) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpArm, wire.InjectArm{Name: x.Name, On: x.value(i) == "on"}, nil)
}
