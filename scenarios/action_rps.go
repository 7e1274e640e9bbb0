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

// RPS sets rps_cpus (and rps_flow_cnt) of RX queues.
type RPS struct {
	Dev     string   `yaml:"dev"`
	Netns   string   `yaml:"netns"`
	Queues  []int    `yaml:"queues"`   // default: queue 0
	CPUs    []string `yaml:"cpus"`     // hex masks, cycled per repetition ("0" = off)
	FlowCnt *int     `yaml:"flow_cnt"` // rps_flow_cnt, for RFS
}

func (r *RPS) check(k *checker, st *Step) {
	k.checkRef(st.Pos, r.Netns, r.Dev)
	k.masks(st.Pos, r.CPUs, r.FlowCnt == nil)
}

func (r *RPS) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("rps_cpus of %s rx queues %v = %s", r.Dev, queuesOr(r.Queues), strings.Join(r.CPUs, ", then "))
}

func (r *RPS) label() string { return "rps" }

// value is the mask repetition i sets, "" when it sets none.
func (r *RPS) value(i int) string {
	if len(r.CPUs) == 0 {
		return ""
	}
	return r.CPUs[i%len(r.CPUs)]
}

func (r *RPS) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	for _, q := range queuesOr(r.Queues) {
		dir := path.Join("/sys/class/net", r.Dev, "queues", "rx-"+strconv.Itoa(q))
		if len(r.CPUs) > 0 {
			if err := lab.Call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_cpus", Netns: r.Netns, Value: r.value(i)}, nil); err != nil {
				return err
			}
		}
		if r.FlowCnt != nil {
			if err := lab.Call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_flow_cnt", Netns: r.Netns, Value: strconv.Itoa(*r.FlowCnt)}, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
