package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// starters start the tcp and rr kinds. Each validates the spec, opens its
// listening sockets in the load's netns (so a bad address fails the start)
// and runs its goroutines through l.spawn; startLoad closes l.done once they
// have all returned, which they do when ctx ends.
var starters = map[string]func(a *agent, ctx context.Context, l *load) error{
	wire.LoadTCPSink:  startTCPSink,
	wire.LoadTCPSend:  startTCPSend,
	wire.LoadRRServer: startRRServer,
	wire.LoadRRClient: startRRClient,
	wire.LoadXSK:      startXSK,
}

// retryDelay is the pause after a failed connect, write or read before a
// sender or client tries again: links bounce during scenarios.
const retryDelay = 10 * time.Millisecond

// checkAddr validates the load's address; listeners may leave Addr empty
// to bind every address.
func checkAddr(s wire.Load, listener bool) error {
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("bad port %d, want [1-65535]", s.Port)
	}
	if net.ParseIP(s.Addr) == nil && (!listener || s.Addr != "") {
		return fmt.Errorf("bad addr %q, want an IP address", s.Addr)
	}
	return nil
}

func hostPort(s wire.Load) string { return net.JoinHostPort(s.Addr, strconv.Itoa(s.Port)) }

// spawn runs fn on a goroutine counted in l.wg and pinned to the load's CPU.
func (l *load) spawn(fn func()) {
	l.wg.Go(func() {
		l.pin()
		fn()
	})
}

// pin locks the calling goroutine to its thread for good, so that the
// thread exits with the goroutine, and gives the thread the load's CPU and
// scheduling; a load with neither is left alone (the udp kinds lock their
// thread even then). A refusal is logged: these goroutines start after the
// load did.
func (l *load) pin() {
	if l.spec.CPU < 0 && l.spec.Policy == "" && l.spec.Nice == nil {
		return
	}
	runtime.LockOSThread()
	if err := l.tune(); err != nil {
		logf("load %s: %v", l.spec.Name, err)
	}
}

// tune gives the calling thread the load's CPU (if any), policy and nice.
func (l *load) tune() error {
	x := wire.Sched{Policy: l.spec.Policy, Priority: l.spec.Priority, Nice: l.spec.Nice}
	var set *unix.CPUSet
	if l.spec.CPU >= 0 {
		set = new(unix.CPUSet)
		set.Set(l.spec.CPU)
		x.CPUs = strconv.Itoa(l.spec.CPU)
	}
	if err := checkSched(x); err != nil {
		return err
	}
	return tune(0, x, set)
}

// listen opens a TCP listener on the load's address inside its netns.
func (a *agent) listen(ctx context.Context, s wire.Load) (net.Listener, error) {
	var ln net.Listener
	err := a.ns.in(s.Netns, func() (err error) {
		ln, err = new(net.ListenConfig).Listen(ctx, "tcp", hostPort(s))
		return err
	})
	return ln, err
}

// dial connects to the load's address from inside its netns. Go creates the
// socket on the calling goroutine, whose thread in() has moved there.
func (a *agent) dial(ctx context.Context, s wire.Load, network string) (net.Conn, error) {
	var c net.Conn
	err := a.ns.in(s.Netns, func() (err error) {
		d := net.Dialer{Timeout: time.Second}
		c, err = d.DialContext(ctx, network, hostPort(s))
		return err
	})
	return c, err
}

// serve accepts connections on ln until ctx ends and runs handle on each in
// its own pinned goroutine. Stopping closes ln and every connection. An error
// from handle counts unless it is a clean close (EOF) or the stop.
func (l *load) serve(ctx context.Context, ln net.Listener, handle func(net.Conn) error) {
	context.AfterFunc(ctx, func() { ln.Close() })
	l.spawn(func() {
		for {
			c, err := ln.Accept()
			if ctx.Err() != nil {
				if err == nil {
					c.Close()
				}
				return
			}
			if err != nil {
				l.errors.Add(1)
				sleep(ctx, retryDelay)
				continue
			}
			if l.spec.BusyPoll > 0 {
				if err := setBusyPoll(c.(syscall.Conn), l.spec.BusyPoll); err != nil {
					logf("load %s: %v", l.spec.Name, err)
				}
			}
			l.spawn(func() {
				stop := context.AfterFunc(ctx, func() { c.Close() })
				defer stop()
				defer c.Close()
				if err := handle(c); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
					l.errors.Add(1)
				}
			})
		}
	})
}

// connected runs fn on a fresh connection to the load's address until ctx
// ends. A failed dial or an error from fn counts, and it dials again after
// retryDelay, so the load outlives a link bounce.
func (a *agent) connected(ctx context.Context, l *load, network string, fn func(net.Conn) error) {
	for ctx.Err() == nil {
		c, err := a.dial(ctx, l.spec, network)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			err = fn(c)
			stop()
			c.Close()
		}
		if err != nil && ctx.Err() == nil {
			l.errors.Add(1)
			sleep(ctx, retryDelay)
		}
	}
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// pacer spaces one flow's iterations so flows of them make rate per second
// together; rate 0 never waits. Behind schedule it does not wait, so the
// average holds; after a stall of over a second it restarts from now
// instead of bursting to catch up.
type pacer struct {
	interval time.Duration
	next     time.Time
}

func newPacer(rate, flows int) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	return &pacer{interval: time.Second * time.Duration(flows) / time.Duration(rate)}
}

// wait blocks until the next iteration is due and reports whether ctx is
// still live.
func (p *pacer) wait(ctx context.Context) bool {
	if p.interval == 0 {
		return ctx.Err() == nil
	}
	now := time.Now()
	if p.next.IsZero() || now.Sub(p.next) > time.Second {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(p.interval)
	if d <= 0 {
		return ctx.Err() == nil
	}
	return sleep(ctx, d)
}
