package scenarios

import (
	"context"
	"fmt"
	"time"

	"napilab/internal/wire"
)

// XDP attaches or detaches a trivial XDP_PASS program.
type XDP struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	On    *bool  `yaml:"attached"` // unset = toggle, starting with attach
	Mode  string `yaml:"mode"`     // native, generic or "" (kernel's choice)
}

func (x *XDP) check(k *checker, st *Step) {
	k.checkRef(st.Pos, x.Netns, x.Dev)
	if !contains([]string{"", "native", "generic"}, x.Mode) {
		k.c.add(st.Pos, "xdp mode %q: want native or generic", x.Mode)
	}
}

func (x *XDP) explain() (time.Duration, string) {
	s := "attach/detach"
	if x.On != nil {
		s = map[bool]string{true: "attach", false: "detach"}[*x.On]
	}
	return 0, fmt.Sprintf("XDP_PASS %s on %s%s %s", s, x.Dev, inNetns(x.Netns), x.Mode)
}

func (x *XDP) label() string { return "xdp" }

// value is attach or detach; a toggle starts with attach.
func (x *XDP) value(i int) string {
	if x.On != nil && *x.On || x.On == nil && i%2 == 0 {
		return "attach"
	}
	return "detach"
}

func (x *XDP) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpXDP, wire.XDP{Dev: x.Dev, Netns: x.Netns, Attach: x.value(i) == "attach", Mode: x.Mode}, nil)
}
