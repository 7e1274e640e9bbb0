package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"napilab/internal/wire"
)

// Channels sets the combined channel count, cycling through Values.
type Channels struct {
	Dev    string `yaml:"dev"`
	Netns  string `yaml:"netns"`
	Values []int  `yaml:"values"`
}

func (x *Channels) check(k *checker, st *Step) {
	k.checkRef(st.Pos, x.Netns, x.Dev)
	if len(x.Values) == 0 {
		k.c.add(st.Pos, "channels needs values:")
	}
	for _, v := range x.Values {
		if v < 1 || v > MaxQueues {
			k.c.add(st.Pos, "channels %d: want 1-%d", v, MaxQueues)
		}
	}
}

func (x *Channels) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("ethtool -L %s combined %v%s", x.Dev, x.Values, inNetns(x.Netns))
}

func (x *Channels) label() string { return "channels " + x.Dev }

func (x *Channels) value(i int) string {
	if len(x.Values) == 0 {
		return ""
	}
	return strconv.Itoa(x.Values[i%len(x.Values)])
}

func (x *Channels) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	n := x.Values[i%len(x.Values)]
	return lab.Call(ctx, wire.OpChannels, wire.Channels{Dev: x.Dev, Netns: x.Netns, Combined: n}, nil)
}
