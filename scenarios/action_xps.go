package scenarios

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"napilab/internal/wire"
)

// XPS sets xps_cpus of TX queues.
type XPS struct {
	Dev    string   `yaml:"dev"`
	Netns  string   `yaml:"netns"`
	Queues []int    `yaml:"queues"`
	CPUs   []string `yaml:"cpus"`
}

func (x *XPS) check(k *checker, st *Step) {
	k.checkRef(st.Pos, x.Netns, x.Dev)
	k.masks(st.Pos, x.CPUs, true)
}

func (x *XPS) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("xps_cpus of %s tx queues %v = %s", x.Dev, queuesOr(x.Queues), strings.Join(x.CPUs, ", then "))
}

func (x *XPS) label() string { return "xps" }

func (x *XPS) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	for _, q := range queuesOr(x.Queues) {
		p := path.Join("/sys/class/net", x.Dev, "queues", "tx-"+strconv.Itoa(q), "xps_cpus")
		if err := lab.Call(ctx, wire.OpWrite, wire.File{Path: p, Netns: x.Netns, Value: x.CPUs[i%len(x.CPUs)]}, nil); err != nil {
			return err
		}
	}
	return nil
}
