package scenarios

import (
	"fmt"
	"strings"
	"time"
)

// XSK makes a load's receiver an AF_XDP socket bound to one RX queue of the
// device its to: address sits on (or its nic), fed by an XDP program that
// redirects that queue's UDP datagrams to to.port into it; everything else
// (ARP included) goes on to the stack. The load's busy_poll sets
// SO_BUSY_POLL on the socket and sink_cpu pins its thread.
type XSK struct {
	// Mode is sink (count frames and bytes; the sender is the udp one) or
	// rr (answer every request on the tx ring; the sender is the rr client,
	// whose latency histogram the load reports).
	Mode  string `yaml:"mode"`
	Queue int    `yaml:"queue"` // RX queue, default 0
	// AppDelay is busy-waited for each request before its answer (rr).
	AppDelay Duration `yaml:"app_delay"`
	// Receive is how the thread waits for frames: blocking (default, poll()
	// that sleeps), poll (poll() with a zero timeout, in a loop) or busy
	// (spin on the ring, recvfrom kicks while it is empty).
	Receive string `yaml:"receive"`
	// PreferBusyPoll sets SO_PREFER_BUSY_POLL.
	PreferBusyPoll bool `yaml:"prefer_busy_poll"`
	// BusyPollBudget sets SO_BUSY_POLL_BUDGET (packets per busy poll).
	BusyPollBudget int `yaml:"busy_poll_budget"`
	// Batch is the most frames one pass takes off the rx ring (default 64).
	Batch int `yaml:"batch"`
	// ZeroCopy asks for XDP_ZEROCOPY; a driver that refuses gets copy mode,
	// and the result says which mode bound.
	ZeroCopy bool `yaml:"zero_copy"`
	// XDPMode is native or generic; empty lets the kernel choose.
	XDPMode string `yaml:"xdp_mode"`
	// PollCPU runs a second thread on that CPU that only kicks rx, so the
	// NAPI is busy-polled from a separate core (with busy_poll set).
	PollCPU *int `yaml:"poll_cpu"`
}

// XSK modes.
const (
	XSKSink = "sink"
	XSKRR   = "rr"
)

// MaxXSKBatch is the socket's rx ring size.
const MaxXSKBatch = 1024

// HasLatency says whether the load reports request/response latency.
func (l *Load) HasLatency() bool {
	return l.Kind == "rr" || l.Kind == "xsk" && l.XSK != nil && l.XSK.Mode == XSKRR
}

// xsk checks an xsk load's options, after its to: is resolved.
func (k *checker) xsk(l *Load) {
	c, p, x := k.c, l.Pos, l.XSK
	if l.Kind != "xsk" {
		if x != nil {
			c.add(p, "load %s: xsk options need kind: xsk", l.Name)
		}
		return
	}
	if x == nil {
		c.add(p, "load %s: kind xsk needs an xsk: block (mode: sink or rr)", l.Name)
		return
	}
	if x.Mode != XSKSink && x.Mode != XSKRR {
		c.add(p, "load %s: xsk.mode %q: want sink or rr", l.Name, x.Mode)
	}
	if x.Mode == XSKRR && l.From.Host {
		c.add(p, "load %s: an xsk rr load's client runs in the guest: from: {netns: ...}", l.Name)
	}
	if !contains([]string{"", "blocking", "poll", "busy"}, x.Receive) {
		c.add(p, "load %s: xsk.receive %q: want blocking, poll or busy", l.Name, x.Receive)
	}
	if !contains([]string{"", "native", "generic"}, x.XDPMode) {
		c.add(p, "load %s: xsk.xdp_mode %q: want native or generic", l.Name, x.XDPMode)
	}
	if x.Batch < 0 || x.Batch > MaxXSKBatch {
		c.add(p, "load %s: xsk.batch %d: want 1-%d", l.Name, x.Batch, MaxXSKBatch)
	}
	if x.BusyPollBudget < 0 || x.BusyPollBudget > 65535 {
		c.add(p, "load %s: xsk.busy_poll_budget %d: want 0-65535", l.Name, x.BusyPollBudget)
	}
	if d := x.AppDelay.D(); d < 0 || d > time.Second {
		c.add(p, "load %s: xsk.app_delay %v: want 0-1s", l.Name, d)
	}
	if x.PollCPU != nil && (*x.PollCPU < 0 || *x.PollCPU >= k.s.Machine.CPUs) {
		c.add(p, "load %s: xsk.poll_cpu %d: the machine has %d cpus", l.Name, *x.PollCPU, k.s.Machine.CPUs)
	}
	if q := k.queues(l.SinkDev); x.Queue < 0 || q > 0 && x.Queue >= q {
		c.add(p, "load %s: xsk.queue %d: want below %d, the queue count of %s", l.Name, x.Queue, q, l.SinkDev)
	}
}

// explainXSK says what an xsk load's receiver does.
func explainXSK(l *Load) string {
	x := l.XSK
	if x == nil {
		return ""
	}
	batch := x.Batch
	if batch == 0 {
		batch = 64
	}
	parts := []string{fmt.Sprintf("AF_XDP %s on %s queue %d", x.Mode, l.SinkDev, x.Queue),
		"receive " + or(x.Receive, "blocking"), fmt.Sprintf("batch %d", batch)}
	if x.AppDelay > 0 {
		parts = append(parts, fmt.Sprintf("%v busy-wait per request", x.AppDelay.D()))
	}
	if x.PreferBusyPoll {
		parts = append(parts, "SO_PREFER_BUSY_POLL")
	}
	if x.BusyPollBudget > 0 {
		parts = append(parts, fmt.Sprintf("SO_BUSY_POLL_BUDGET %d", x.BusyPollBudget))
	}
	if x.PollCPU != nil {
		parts = append(parts, fmt.Sprintf("rx kicked from cpu %d", *x.PollCPU))
	}
	mode := "copy mode"
	if x.ZeroCopy {
		mode = "zero-copy if the driver takes it, else copy mode"
	}
	parts = append(parts, mode, "XDP "+or(x.XDPMode, "native if the driver has it"))
	return ", " + strings.Join(parts, ", ")
}
