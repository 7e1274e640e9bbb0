package scenarios

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"napilab/internal/wire"
)

// IRQ pins every IRQ whose name (last column of /proc/interrupts) matches.
type IRQ struct {
	Match string `yaml:"match"` // regexp, e.g. virtio.-input.0
	CPUs  string `yaml:"cpus"`  // smp_affinity_list: "1", "0-1"
}

func (x *IRQ) check(k *checker, st *Step) {
	if _, err := regexp.Compile(x.Match); err != nil || x.Match == "" {
		k.c.add(st.Pos, "irq match %q: want a regexp of IRQ names (e.g. virtio.-input.0)", x.Match)
	}
	if !cpuList(x.CPUs) {
		k.c.add(st.Pos, "irq cpus %q: want a CPU list like 1 or 0-1 below %d", x.CPUs, k.s.Machine.CPUs)
	}
}

func (x *IRQ) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("pin IRQs matching %q to cpus %s", x.Match, x.CPUs)
}

func (x *IRQ) label() string { return "irq" }

func (x *IRQ) run(ctx context.Context, lab Lab, _ *Step, _ int) error {
	return lab.Call(ctx, wire.OpIRQ, wire.IRQAffinity{Match: x.Match, CPUs: x.CPUs}, nil)
}
