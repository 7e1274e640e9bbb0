package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Exec runs a program from the guest image in a namespace; a non-zero exit fails the step.
type Exec struct {
	Netns string   `yaml:"netns"`
	Argv  []string `yaml:"argv"`
}

func (x *Exec) check(k *checker, st *Step) {
	k.checkNetns(st.Pos, x.Netns)
	if len(x.Argv) == 0 {
		k.c.add(st.Pos, "exec needs argv:")
	}
}

func (x *Exec) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("run %q%s", strings.Join(x.Argv, " "), inNetns(x.Netns))
}

func (x *Exec) label() string { return "exec" }

func (x *Exec) run(ctx context.Context, lab Lab, st *Step, i int) error {
	return lab.Exec(ctx, st, i+1)
}
