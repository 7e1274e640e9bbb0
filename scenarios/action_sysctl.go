package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"napilab/internal/wire"
)

// Sysctl sets /proc/sys values (dots or slashes), cycling through Values.
type Sysctl struct {
	Name   string   `yaml:"name"`
	Netns  string   `yaml:"netns"`
	Value  string   `yaml:"value"`
	Values []string `yaml:"values"`
}

func (x *Sysctl) check(k *checker, st *Step) {
	k.checkNetns(st.Pos, x.Netns)
	if x.Name == "" || (x.Value == "") == (len(x.Values) == 0) {
		k.c.add(st.Pos, "sysctl needs name: and value: or values:")
	}
}

func (x *Sysctl) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("sysctl %s = %s%s", x.Name, values(x.Value, x.Values), inNetns(x.Netns))
}

func (x *Sysctl) label() string { return "sysctl" }

func (x *Sysctl) value(i int) string { return cycle(x.Value, x.Values, i) }

func (x *Sysctl) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	p := "/proc/sys/" + strings.ReplaceAll(x.Name, ".", "/")
	return lab.Call(ctx, wire.OpWrite, wire.File{Path: p, Netns: x.Netns, Value: x.value(i)}, nil)
}
