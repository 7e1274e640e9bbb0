package scenarios

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"napilab/internal/wire"
)

// Qdisc adds, replaces or deletes a device's root qdisc (tc qdisc add|replace|del
// dev DEV root); the kernel picks the handle, and child qdiscs are out of reach.
type Qdisc struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	Op    string `yaml:"op" jsonschema:"enum=add,enum=replace,enum=delete"` // default replace
	// Kind is pfifo, pfifo_fast, fq_codel, mq or noqueue, or a list of them
	// cycled per repetition; delete takes none.
	Kind  StringList `yaml:"kind"`
	Limit int        `yaml:"limit" jsonschema:"minimum=0"` // packets, pfifo and fq_codel only; 0 = the kernel's default
}

// Qdisc ops and kinds the qdisc action takes; limit is for qdiscLimitKinds.
var (
	qdiscOps        = []string{"add", "replace", "delete"}
	qdiscKinds      = []string{"pfifo", "pfifo_fast", "fq_codel", "mq", "noqueue"}
	qdiscLimitKinds = []string{"pfifo", "fq_codel"}
)

func (q *Qdisc) setDefaults() {
	if q.Op == "" {
		q.Op = "replace"
	}
}

func (q *Qdisc) check(k *checker, st *Step) {
	c, p := k.c, st.Pos
	k.checkRef(p, q.Netns, q.Dev)
	if !contains(qdiscOps, q.Op) {
		c.add(p, "qdisc op %q: want %s", q.Op, orList(qdiscOps))
		return
	}
	if q.Op == "delete" {
		if len(q.Kind) > 0 || q.Limit != 0 {
			c.add(p, "qdisc delete removes whatever root qdisc %s has: drop kind: and limit:", q.Dev)
		}
		return
	}
	if len(q.Kind) == 0 {
		c.add(p, "qdisc %s needs kind: %s (or a list of them to cycle)", q.Op, orList(qdiscKinds))
	}
	if q.Limit < 0 || int64(q.Limit) > math.MaxUint32 {
		c.add(p, "qdisc limit %d: want 1-%d packets (none = the kernel's default)", q.Limit, uint32(math.MaxUint32))
	}
	for _, kind := range q.Kind {
		switch {
		case !contains(qdiscKinds, kind):
			c.add(p, "qdisc kind %q: want %s", kind, orList(qdiscKinds))
		case q.Limit != 0 && !contains(qdiscLimitKinds, kind):
			c.add(p, "qdisc %s takes no limit: (limit: is for %s)", kind, strings.Join(qdiscLimitKinds, " and "))
		case kind == "mq" && k.txQueues(q.Netns, q.Dev) == 1:
			c.add(p, "qdisc mq needs a device with several TX queues: %s has one (set its queues:)", q.Dev)
		}
	}
}

func (q *Qdisc) explain() (time.Duration, string) {
	kinds := strings.Join(q.Kind, ", then ")
	if q.Limit > 0 {
		kinds += fmt.Sprintf(" limit %d", q.Limit)
	}
	switch q.Op {
	case "delete":
		return 0, fmt.Sprintf("delete the root qdisc of %s%s (back to the default)", q.Dev, inNetns(q.Netns))
	case "add":
		return 0, fmt.Sprintf("add %s as the root qdisc of %s%s", kinds, q.Dev, inNetns(q.Netns))
	}
	return 0, fmt.Sprintf("replace the root qdisc of %s%s with %s", q.Dev, inNetns(q.Netns), kinds)
}

func (q *Qdisc) label() string { return "qdisc" }

func (q *Qdisc) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	w := wire.Qdisc{Dev: q.Dev, Netns: q.Netns, Op: q.Op, Limit: uint32(q.Limit)}
	if len(q.Kind) > 0 {
		w.Kind = q.Kind[i%len(q.Kind)]
	}
	return lab.Call(ctx, wire.OpQdisc, w, nil)
}
