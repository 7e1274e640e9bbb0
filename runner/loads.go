package runner

import (
	"context"
	"fmt"
	"net"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

func sinkName(load string) string { return load + ".sink" }
func sendName(load string) string { return load + ".send" }

func cpuOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// loadKinds maps a scenario load kind to the agent's receiver and sender kinds.
var loadKinds = map[string][2]string{
	"udp": {wire.LoadUDPSink, wire.LoadUDPSend},
	"tcp": {wire.LoadTCPSink, wire.LoadTCPSend},
	"rr":  {wire.LoadRRServer, wire.LoadRRClient},
}

// xskKinds are an xsk load's receiver and sender kinds by its mode: the
// AF_XDP socket counts a udp sender's datagrams or answers the rr client.
var xskKinds = map[string][2]string{
	scenarios.XSKSink: {wire.LoadXSK, wire.LoadUDPSend},
	scenarios.XSKRR:   {wire.LoadXSK, wire.LoadRRClient},
}

// xskOptions is the agent's form of an xsk load's options.
func xskOptions(l *scenarios.Load) *wire.XSK {
	x := l.XSK
	return &wire.XSK{Dev: l.SinkDev, Queue: x.Queue, Mode: x.Mode, AppDelayNs: int64(x.AppDelay.D()),
		Receive: x.Receive, PreferBusyPoll: x.PreferBusyPoll, BusyPollBudget: x.BusyPollBudget, Batch: x.Batch,
		ZeroCopy: x.ZeroCopy, XDPMode: x.XDPMode, PollCPU: x.PollCPU}
}

// xskSummary is an xsk receiver's binding and socket statistics in a line.
func xskSummary(x *wire.XSKStats) string {
	if x == nil {
		return ""
	}
	s := fmt.Sprintf("AF_XDP %s mode, XDP %s", x.Bound, x.XDPMode)
	if x.ZeroCopyRefused != "" {
		s += " (zero-copy refused: " + x.ZeroCopyRefused + ")"
	}
	return s + fmt.Sprintf("; rx_dropped %d, rx_ring_full %d, fill_ring_empty %d, rx_invalid %d, tx_invalid %d, tx_ring_empty %d",
		x.RxDropped, x.RxRingFull, x.FillRingEmpty, x.RxInvalid, x.TxInvalid, x.TxRingEmpty)
}

// startLoad starts the receiver, then the sender (in the guest or on the host).
func (t *timeline) startLoad(ctx context.Context, name string) error {
	l := t.s.Loads[name]
	kinds := loadKinds[l.Kind]
	proto := l.Proto
	if l.Kind == "rr" && proto == "" {
		proto = "udp"
	}
	var xsk *wire.XSK
	if l.Kind == "xsk" {
		kinds, xsk = xskKinds[l.XSK.Mode], xskOptions(l)
	}
	sink := wire.Load{Name: sinkName(name), Kind: kinds[0], Netns: l.SinkNetns, Addr: l.SinkAddr,
		Port: l.To.Port, Size: l.Size, CPU: cpuOr(l.SinkCPU), BusyPoll: l.BusyPoll, Proto: proto, XSK: xsk,
		Policy: l.SinkPolicy, Priority: l.SinkPriority, Nice: l.SinkNice, RcvBuf: l.RcvBuf}

	if err := t.ctl.call(ctx, wire.OpStart, sink, nil); err != nil {
		return fmt.Errorf("start receiver of %s: %w", name, err)
	}
	a := &activeLoad{load: l}
	if l.From.Host {
		inj, err := startInjector(t.host, &net.UDPAddr{IP: net.ParseIP(l.SinkAddr), Port: l.To.Port}, l.Flows, l.Size, l.Rate)
		if err != nil {
			return fmt.Errorf("start host sender of %s: %w", name, err)
		}
		a.inj = inj
	} else {
		send := wire.Load{Name: sendName(name), Kind: kinds[1], Netns: l.From.Netns, Addr: l.SinkAddr,
			Port: l.To.Port, Flows: l.Flows, Size: l.Size, Rate: l.Rate, CPU: cpuOr(l.CPU), Proto: proto,
			OpenLoop: l.OpenLoop}
		if err := t.ctl.call(ctx, wire.OpStart, send, nil); err != nil {
			return fmt.Errorf("start sender of %s: %w", name, err)
		}
	}
	t.mu.Lock()
	t.loads[name] = a
	t.mu.Unlock()
	return nil
}

// stopLoad stops the sender, lets in-flight packets land, then stops the sink.
func (t *timeline) stopLoad(ctx context.Context, name string) error {
	t.mu.Lock()
	a, ok := t.loads[name]
	delete(t.loads, name)
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("load %s is not running", name)
	}
	res := &loadResult{}
	if a.inj != nil {
		var start time.Time
		res.sent, res.sendErrors, start, res.sending = a.inj.stop()
		res.sendingFrom = start.Sub(t.start).Seconds()
	} else {
		var st wire.LoadStats
		if err := t.ctl.call(ctx, wire.OpStop, wire.LoadName{Name: sendName(name)}, &st); err != nil {
			return fmt.Errorf("stop sender of %s: %w", name, err)
		}
		res.sent, res.sendErrors, res.sender = st.Packets, st.Errors, &st
	}
	time.Sleep(200 * time.Millisecond)
	var sink wire.LoadStats
	if err := t.ctl.call(ctx, wire.OpStop, wire.LoadName{Name: sinkName(name)}, &sink); err != nil {
		return fmt.Errorf("stop sink of %s: %w", name, err)
	}
	res.sink = &sink
	t.mu.Lock()
	t.stats[name] = res
	t.mu.Unlock()
	return nil
}
