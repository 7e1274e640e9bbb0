package scenarios

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"napilab/internal/wire"
)

// NAPI changes the settings of a device's NAPIs through the netdev generic
// netlink family: napi-get finds them, napi-set changes each.
type NAPI struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	// Queue selects the NAPI serving this RX queue; unset = every NAPI of the device.
	Queue *int `yaml:"queue" jsonschema:"minimum=0"`
	// Threaded is disabled, enabled or busy-poll (6.19), or a list of them
	// cycled per repetition.
	Threaded StringList `yaml:"threaded"`
	// DeferHardIRQs is napi_defer_hard_irqs of the NAPI.
	DeferHardIRQs *int64 `yaml:"defer_hard_irqs" jsonschema:"minimum=0,maximum=2147483647"`
	// GROFlushTimeout is gro_flush_timeout (sent in nanoseconds).
	GROFlushTimeout *Duration `yaml:"gro_flush_timeout"`
	// IRQSuspendTimeout is irq-suspend-timeout (sent in nanoseconds).
	IRQSuspendTimeout *Duration `yaml:"irq_suspend_timeout"`
}

// napiSettings names the settings a napi step may change.
const napiSettings = "threaded, defer_hard_irqs, gro_flush_timeout or irq_suspend_timeout"

func (n *NAPI) check(k *checker, st *Step) {
	c, p := k.c, st.Pos
	k.checkRef(p, n.Netns, n.Dev)
	if len(n.Threaded) == 0 && n.DeferHardIRQs == nil && n.GROFlushTimeout == nil && n.IRQSuspendTimeout == nil {
		c.add(p, "napi on %s needs at least one setting: %s", n.Dev, napiSettings)
	}
	for _, m := range n.Threaded {
		if !contains(wire.NAPIThreadedModes, m) {
			c.add(p, "napi threaded %q: want %s (or a list of them to cycle)", m, orList(wire.NAPIThreadedModes))
		}
	}
	// The kernel's policy: defer-hard-irqs is a u32 up to S32_MAX.
	if d := n.DeferHardIRQs; d != nil && (*d < 0 || *d > math.MaxInt32) {
		c.add(p, "napi defer_hard_irqs %d: want 0-%d", *d, math.MaxInt32)
	}
	if q := n.Queue; q != nil {
		if rx := k.txQueues(n.Netns, n.Dev); *q < 0 || rx > 0 && *q >= rx {
			c.add(p, "napi queue %d: want an RX queue of %s, 0-%d", *q, n.Dev, max(rx, 1)-1)
		}
	}
}

// explain says what a napi step sets.
func (n *NAPI) explain() (time.Duration, string) {
	var set []string
	if len(n.Threaded) > 0 {
		set = append(set, "threaded "+strings.Join(n.Threaded, ", then "))
	}
	if n.DeferHardIRQs != nil {
		set = append(set, fmt.Sprintf("defer_hard_irqs %d", *n.DeferHardIRQs))
	}
	if n.GROFlushTimeout != nil {
		set = append(set, "gro_flush_timeout "+n.GROFlushTimeout.D().String())
	}
	if n.IRQSuspendTimeout != nil {
		set = append(set, "irq_suspend_timeout "+n.IRQSuspendTimeout.D().String())
	}
	which := "every NAPI of " + n.Dev
	if n.Queue != nil {
		which = fmt.Sprintf("the NAPI of %s rx queue %d", n.Dev, *n.Queue)
	}
	if n.Netns != "" {
		which += " in netns " + n.Netns
	}
	return 0, fmt.Sprintf("napi-set %s: %s", which, strings.Join(set, ", "))
}

func (n *NAPI) label() string { return "napi " + n.Dev }

// value is the threaded mode repetition i sets, "" when it sets none.
func (n *NAPI) value(i int) string {
	if len(n.Threaded) == 0 {
		return ""
	}
	return n.Threaded[i%len(n.Threaded)]
}

func (n *NAPI) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpNAPI, n.args(i), nil)
}

// args is what repetition i asks the agent to set.
func (n *NAPI) args(i int) wire.NAPI {
	w := wire.NAPI{Dev: n.Dev, Netns: n.Netns, Queue: n.Queue, Threaded: n.value(i)}
	if n.DeferHardIRQs != nil {
		v := uint32(*n.DeferHardIRQs)
		w.DeferHardIRQs = &v
	}
	ns := func(d *Duration) *uint64 {
		if d == nil {
			return nil
		}
		v := uint64(d.D().Nanoseconds())
		return &v
	}
	w.GROFlushTimeout, w.IRQSuspendTimeout = ns(n.GROFlushTimeout), ns(n.IRQSuspendTimeout)
	return w
}
