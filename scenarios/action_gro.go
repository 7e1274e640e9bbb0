package scenarios

import (
	"context"
	"fmt"
	"time"

	"napilab/internal/wire"
)

// GRO switches rx-gro on a device.
type GRO struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	On    *bool  `yaml:"enabled"` // unset = toggle each repetition
}

func (g *GRO) check(k *checker, st *Step) { k.checkRef(st.Pos, g.Netns, g.Dev) }

func (g *GRO) explain() (time.Duration, string) {
	s := "toggle"
	if g.On != nil {
		s = map[bool]string{true: "on", false: "off"}[*g.On]
	}
	return 0, fmt.Sprintf("GRO %s on %s%s", s, g.Dev, inNetns(g.Netns))
}

func (g *GRO) label() string { return "gro " + g.Dev }

// value is on or off; a toggle starts with off.
func (g *GRO) value(i int) string {
	if g.On != nil && *g.On || g.On == nil && i%2 == 1 {
		return "on"
	}
	return "off"
}

func (g *GRO) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpFeature, wire.Feature{Dev: g.Dev, Netns: g.Netns, Feature: "rx-gro", On: g.value(i) == "on"}, nil)
}
