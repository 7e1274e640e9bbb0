package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

const (
	xskDefaultBatch = 64
	xskWaitTick     = 100 * time.Millisecond // a blocking wait wakes this often to notice a stop
)

// xskSpec validates an xsk load and fills its defaults.
func xskSpec(s wire.Load) (wire.XSK, error) {
	if s.XSK == nil {
		return wire.XSK{}, errors.New("xsk load without xsk options")
	}
	x := *s.XSK
	if x.Batch == 0 {
		x.Batch = xskDefaultBatch
	}
	if x.Receive == "" {
		x.Receive = wire.XSKBlocking
	}
	switch {
	case s.Port < 1 || s.Port > 65535:
		return x, fmt.Errorf("bad port %d, want [1-65535]", s.Port)
	case x.Dev == "":
		return x, errors.New("xsk load without dev")
	case x.Queue < 0:
		return x, fmt.Errorf("bad queue %d", x.Queue)
	case x.Mode != wire.XSKSink && x.Mode != wire.XSKRR:
		return x, fmt.Errorf("bad mode %q, want %s or %s", x.Mode, wire.XSKSink, wire.XSKRR)
	case x.Receive != wire.XSKBlocking && x.Receive != wire.XSKPoll && x.Receive != wire.XSKBusy:
		return x, fmt.Errorf("bad receive %q, want %s, %s or %s", x.Receive, wire.XSKBlocking, wire.XSKPoll, wire.XSKBusy)
	case x.Batch < 1 || x.Batch > xskRingSize:
		return x, fmt.Errorf("bad batch %d, want [1-%d]", x.Batch, xskRingSize)
	case x.AppDelayNs < 0 || x.BusyPollBudget < 0 || x.BusyPollBudget > 65535:
		return x, fmt.Errorf("bad app_delay_ns %d or busy_poll_budget %d", x.AppDelayNs, x.BusyPollBudget)
	}
	if _, err := xskAttachFlags(x.XDPMode); err != nil {
		return x, err
	}
	return x, nil
}

// startXSK binds an AF_XDP socket to the load's queue in its netns (zero-copy
// when asked and the driver takes it, else copy mode), attaches the program
// that feeds it and runs the receive loop on a pinned thread; with PollCPU a
// second thread kicks rx from that CPU. Stopping detaches and closes it all.
func startXSK(a *agent, ctx context.Context, l *load) error {
	cfg, err := xskSpec(l.spec)
	if err != nil {
		return err
	}
	st := &wire.XSKStats{}
	var x *xsk
	var prog *xskProg
	err = a.ns.in(l.spec.Netns, func() error {
		var err error
		x, err = bindXSK(cfg, st)
		if err != nil {
			return err
		}
		if err = setBusyPollOpts(x.fd, l.spec.BusyPoll, cfg); err == nil {
			prog, err = attachXSKProg(cfg.Dev, cfg.Queue, l.spec.Port, x.fd, cfg.XDPMode)
		}
		if err != nil {
			x.close()
		}
		return err
	})
	if err != nil {
		return err
	}
	st.XDPMode = prog.mode
	logf("load %s: AF_XDP socket on %s queue %d bound in %s mode (xdp %s)%s", l.spec.Name, cfg.Dev, cfg.Queue,
		st.Bound, st.XDPMode, refusal(st))
	l.mu.Lock()
	l.xsk = st
	l.mu.Unlock()
	lp := &xskLoop{x: x, l: l, cfg: cfg, delay: time.Duration(cfg.AppDelayNs)}
	context.AfterFunc(ctx, func() { lp.stop.Store(true) })
	kicked := make(chan struct{})
	if cfg.PollCPU != nil {
		lp.kicker = true
		l.wg.Go(func() {
			defer close(kicked)
			pinTo(l.spec.Name, *cfg.PollCPU)
			for !lp.stop.Load() {
				x.kickRx()
			}
		})
	} else {
		close(kicked)
	}
	l.spawn(func() {
		runtime.LockOSThread()
		lp.run()
		<-kicked // the kicker is done with the fd
		lp.finish(prog)
	})
	return nil
}

func refusal(st *wire.XSKStats) string {
	if st.ZeroCopyRefused == "" {
		return ""
	}
	return ", zero-copy refused: " + st.ZeroCopyRefused
}

// bindXSK opens the socket in the calling thread's netns, trying zero-copy
// first when cfg asks, and records the mode that bound in st.
func bindXSK(cfg wire.XSK, st *wire.XSKStats) (*xsk, error) {
	link, err := netlink.LinkByName(cfg.Dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", cfg.Dev, err)
	}
	c := xskConfig{ifindex: link.Attrs().Index, queue: cfg.Queue, zeroCopy: cfg.ZeroCopy}
	x, err := openXSKRetry(c)
	if errors.Is(err, errZeroCopy) && !errors.Is(err, unix.EBUSY) {
		st.ZeroCopyRefused = err.Error()
		c.zeroCopy = false
		x, err = openXSKRetry(c)
	}
	if err != nil {
		return nil, fmt.Errorf("AF_XDP on %s: %w", cfg.Dev, err)
	}
	st.Bound = "copy"
	if x.zeroCopy {
		st.Bound = "zero-copy"
	}
	return x, nil
}

// xskBusyWait bounds how long a bind waits for the queue's previous socket
// to be gone: the kernel releases a closed socket's buffer pool, and with it
// the queue, from a workqueue, so a bind right after a stop sees EBUSY.
const xskBusyWait = 2 * time.Second

func openXSKRetry(c xskConfig) (*xsk, error) {
	for t0 := time.Now(); ; {
		x, err := openXSK(c)
		if !errors.Is(err, unix.EBUSY) || time.Since(t0) > xskBusyWait {
			return x, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// setBusyPollOpts sets the busy-poll socket options the load asks for.
func setBusyPollOpts(fd, busyPoll int, cfg wire.XSK) error {
	for _, o := range []struct {
		name     string
		opt, val int
		set      bool
	}{
		{"SO_BUSY_POLL", unix.SO_BUSY_POLL, busyPoll, busyPoll > 0},
		{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1, cfg.PreferBusyPoll},
		{"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, cfg.BusyPollBudget, cfg.BusyPollBudget > 0},
	} {
		if !o.set {
			continue
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o.opt, o.val); err != nil {
			return fmt.Errorf("set %s %d: %w", o.name, o.val, err)
		}
	}
	return nil
}

// pinTo locks the calling goroutine to its thread and the thread to cpu.
func pinTo(name string, cpu int) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		logf("load %s: pin to cpu %d: %v", name, cpu, err)
	}
}

// xskLoop is the receive loop of one socket: it owns the rings' user side.
type xskLoop struct {
	x      *xsk
	l      *load
	cfg    wire.XSK
	delay  time.Duration
	kicker bool // another thread kicks rx
	stop   atomic.Bool
}

func (p *xskLoop) run() {
	batch := uint32(p.cfg.Batch)
	for !p.stop.Load() {
		p.recycle()
		i, n := p.x.rx.ready(batch)
		if n == 0 {
			p.flushTx()
			p.wait()
			continue
		}
		if p.cfg.Mode == wire.XSKRR {
			p.answer(i, n)
		} else {
			p.sink(i, n)
		}
	}
}

// wait is what the thread does when the rx ring is empty.
func (p *xskLoop) wait() {
	var err error
	switch p.cfg.Receive {
	case wire.XSKBusy:
		if !p.kicker {
			err = p.x.kickRx()
		}
	case wire.XSKPoll:
		_, err = unix.Poll([]unix.PollFd{{Fd: int32(p.x.fd), Events: unix.POLLIN}}, 0)
	default:
		_, err = unix.Poll([]unix.PollFd{{Fd: int32(p.x.fd), Events: unix.POLLIN}}, int(xskWaitTick/time.Millisecond))
	}
	if err != nil && !errors.Is(err, unix.EINTR) {
		p.l.errors.Add(1)
		time.Sleep(time.Millisecond)
	}
}

// sink counts n frames from rx index i and gives them back to the fill ring.
func (p *xskLoop) sink(i, n uint32) {
	var bytes uint64
	f, _ := p.x.fill.reserve(n) // the fill ring has room for every frame
	for k := range n {
		d := p.x.rx.desc(i + k)
		bytes += uint64(d.Len)
		*p.x.fill.addr(f + k) = d.Addr
	}
	p.x.fill.submit(n)
	p.x.rx.release(n)
	p.l.bytes.Add(bytes)
	p.l.count(int(n))
}

// answer turns n requests from rx index i into answers on the tx ring, each
// after the application delay. A frame that is not a UDP request, or finds
// the tx ring full, goes back to the fill ring and counts an error.
func (p *xskLoop) answer(i, n uint32) {
	t, room := p.x.tx.reserve(n)
	f, _ := p.x.fill.reserve(n)
	var sent, dropped uint32
	var bytes uint64
	for k := range n {
		d := p.x.rx.desc(i + k)
		spin(p.delay)
		size, err := udpReply(p.x.frame(d))
		if err != nil || sent == room {
			*p.x.fill.addr(f + dropped) = d.Addr
			dropped++
			continue
		}
		*p.x.tx.desc(t + sent) = unix.XDPDesc{Addr: d.Addr, Len: uint32(size)}
		sent++
		bytes += 2 * uint64(size)
	}
	p.x.tx.submit(sent)
	p.x.fill.submit(dropped)
	p.x.rx.release(n)
	p.flushTx()
	p.l.errors.Add(uint64(dropped))
	p.l.bytes.Add(bytes)
	p.l.count(int(sent))
}

// flushTx kicks the kernel while the tx ring holds frames it has not taken:
// copy mode sends only from sendto (or poll), a batch per call.
func (p *xskLoop) flushTx() {
	tx := p.x.tx
	if ringEntries(atomic.LoadUint32(tx.producer), atomic.LoadUint32(tx.consumer)) == 0 {
		return
	}
	if p.x.zeroCopy && !tx.needWakeup() {
		return
	}
	if err := p.x.kickTx(); err != nil {
		p.l.errors.Add(1)
	}
}

// recycle moves sent frames from the completion ring back to the fill ring.
func (p *xskLoop) recycle() {
	c, n := p.x.cq.ready(xskFrames)
	if n == 0 {
		return
	}
	f, _ := p.x.fill.reserve(n)
	for k := range n {
		*p.x.fill.addr(f + k) = *p.x.cq.addr(c + k)
	}
	p.x.fill.submit(n)
	p.x.cq.release(n)
}

// finish records the socket's statistics, then detaches the program and
// closes the socket.
func (p *xskLoop) finish(prog *xskProg) {
	st, err := p.x.stats()
	prog.close()
	p.x.close()
	if err != nil {
		logf("load %s: XDP_STATISTICS: %v", p.l.spec.Name, err)
		return
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	x := p.l.xsk
	x.RxDropped, x.RxInvalid, x.TxInvalid = st.Rx_dropped, st.Rx_invalid_descs, st.Tx_invalid_descs
	x.RxRingFull, x.FillRingEmpty, x.TxRingEmpty = st.Rx_ring_full, st.Rx_fill_ring_empty_descs, st.Tx_ring_empty_descs
}

// spin busy-waits d: the application delay burns the CPU as real
// processing would, and a sleep could not give microseconds.
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
