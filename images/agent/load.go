package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

const batch = 32

// load is a running traffic generator or sink.
type load struct {
	spec    wire.Load
	cancel  context.CancelFunc
	done    chan struct{}
	start   float64
	packets atomic.Uint64
	errors  atomic.Uint64
	bytes   atomic.Uint64 // payload bytes moved (tcp and rr kinds)
	// undrained: a udp sink closed its socket before it was empty.
	undrained atomic.Bool
	mu        sync.Mutex
	buckets   []uint64
	lat       *hist          // rr-client only: request/response latency
	xsk       *wire.XSKStats // xsk only: how it bound, its socket statistics
	wg        sync.WaitGroup // tcp and rr kinds: their goroutines; done closes after
}

// count adds n packets to the current bucket.
func (l *load) count(n int) {
	l.mu.Lock()
	l.countLocked(n)
	l.mu.Unlock()
}

// countLocked is count with l.mu held; packets changes under l.mu too so
// stats sees packets, buckets and latency agree.
func (l *load) countLocked(n int) {
	l.packets.Add(uint64(n))
	idx := int((uptime() - l.start) * 1000 / wire.BucketWidthMs)
	for len(l.buckets) <= idx {
		l.buckets = append(l.buckets, 0)
	}
	l.buckets[idx] += uint64(n)
}

func (l *load) stats() *wire.LoadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Pad to now so a stall at the end shows as empty buckets.
	idx := int((uptime() - l.start) * 1000 / wire.BucketWidthMs)
	for len(l.buckets) < idx {
		l.buckets = append(l.buckets, 0)
	}
	st := &wire.LoadStats{
		Name: l.spec.Name, Kind: l.spec.Kind, Packets: l.packets.Load(), Errors: l.errors.Load(),
		Start: l.start, Buckets: append([]uint64(nil), l.buckets...), Bytes: l.bytes.Load(),
		Undrained: l.undrained.Load(),
	}
	if l.lat != nil {
		st.Latency = l.lat.Summary()
	}
	if l.xsk != nil {
		x := *l.xsk
		st.XSK = &x
	}
	return st
}

func (a *agent) startLoad(s wire.Load) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.loads[s.Name]; ok {
		return fmt.Errorf("load %s already running", s.Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{spec: s, cancel: cancel, done: make(chan struct{}), start: uptime()}
	if start, ok := starters[s.Kind]; ok {
		if err := start(a, ctx, l); err != nil {
			cancel()
			return fmt.Errorf("load %s: %w", s.Name, err)
		}
		go func() {
			l.wg.Wait()
			close(l.done)
		}()
		a.loads[s.Name] = l
		return nil
	}
	var conns []*net.UDPConn
	err := a.ns.in(s.Netns, func() error {
		n := 1
		if s.Kind == wire.LoadUDPSend && s.Flows > 1 {
			n = s.Flows
		}
		for i := 0; i < n; i++ {
			var c *net.UDPConn
			var err error
			switch s.Kind {
			case wire.LoadUDPSink:
				c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(s.Addr), Port: s.Port})
				if err == nil {
					err = setRcvBuf(c, s.RcvBuf)
				}
				if err == nil && s.BusyPoll > 0 {
					err = setBusyPoll(c, s.BusyPoll)
				}
				if err != nil && c != nil {
					c.Close()
				}
			case wire.LoadUDPSend:
				c, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(s.Addr), Port: s.Port})
			default:
				err = fmt.Errorf("unknown load kind %q", s.Kind)
			}
			if err != nil {
				return fmt.Errorf("load %s: %w", s.Name, err)
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		cancel()
		return err
	}
	go func() {
		<-ctx.Done()
		if s.Kind == wire.LoadUDPSink {
			// The sink drains its socket and closes it (sink).
			conns[0].SetReadDeadline(time.Now())
			return
		}
		for _, c := range conns {
			c.Close()
		}
	}()
	// The thread is tuned before the start returns: a CPU, policy or nice
	// the kernel refuses fails the start with its errno.
	tuned := make(chan error, 1)
	go func() {
		defer close(l.done)
		runtime.LockOSThread() // for good: a tuned thread exits with the load
		err := l.tune()
		tuned <- err
		switch {
		case err != nil && s.Kind == wire.LoadUDPSink:
			conns[0].Close() // the sink closes its own socket, and never ran
		case err != nil:
		case s.Kind == wire.LoadUDPSink:
			l.sink(ctx, conns[0])
		default:
			l.send(ctx, conns)
		}
	}()
	if err := <-tuned; err != nil {
		cancel()
		<-l.done
		return fmt.Errorf("load %s: %w", s.Name, err)
	}
	a.loads[s.Name] = l
	return nil
}

// queued is the length of the first datagram c's socket holds (SIOCINQ):
// 0 when it is empty (-1: the kernel did not say).
func queued(c *net.UDPConn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	})
	return n
}

// setRcvBuf sizes c's receive buffer: bytes with SO_RCVBUFFORCE (past
// net.core.rmem_max; the kernel doubles it for its overhead), or with 0 the
// lab's default, 4 MiB asked with SO_RCVBUF, which rmem_max caps.
func setRcvBuf(c *net.UDPConn, bytes int) error {
	if bytes == 0 {
		c.SetReadBuffer(4 << 20)
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bytes)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set SO_RCVBUFFORCE %d: %w", bytes, serr)
	}
	return nil
}

// setBusyPoll sets SO_BUSY_POLL (microseconds) on c. Go's sockets are
// non-blocking, so each read busy-polls the NAPI once before it parks in
// epoll; epoll itself busy-polls only with net.core.busy_poll set.
func setBusyPoll(c syscall.Conn, us int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BUSY_POLL, us)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set SO_BUSY_POLL %d: %w", us, serr)
	}
	return nil
}

func (l *load) sink(ctx context.Context, c *net.UDPConn) {
	pc := ipv4.NewPacketConn(c)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	defer c.Close()
	for ctx.Err() == nil {
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			if ctx.Err() == nil {
				l.errors.Add(1)
			}
			continue
		}
		l.count(n)
	}
	if !l.drain(c, pc, msgs) {
		l.undrained.Store(true)
	}
}

// drainIdle and drainMax bound a stopped sink's last reads: it reads what
// its socket holds until nothing came for drainIdle (or drainMax passed),
// so that Received counts every datagram the kernel queued before the
// stop; what arrives after the close, the kernel counts (Udp NoPorts).
// A debug guest behind a host flood still held ~300 datagrams after 1 s.
const (
	drainIdle = 20 * time.Millisecond
	drainMax  = 3 * time.Second
)

// drain reads until the socket stayed empty for drainIdle, and says so;
// false: drainMax ran out first, or a read failed.
func (l *load) drain(c *net.UDPConn, pc *ipv4.PacketConn, msgs []ipv4.Message) bool {
	end := time.Now().Add(drainMax)
	for time.Now().Before(end) {
		// The stop's own deadline (now) may still land after this one:
		// only a read that waited drainIdle ends the drain.
		begin := time.Now()
		pc.SetReadDeadline(begin.Add(drainIdle))
		n, err := pc.ReadBatch(msgs, 0)
		if n > 0 {
			l.count(n)
		}
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return false
			}
			// A goroutine woken late sees its deadline, not the datagram
			// that came first (a debug guest left ~270 in the socket):
			// idle is an empty socket, asked of the kernel.
			if time.Since(begin) >= drainIdle && queued(c) == 0 {
				return true
			}
		}
	}
	return false
}

func (l *load) send(ctx context.Context, conns []*net.UDPConn) {
	size := l.spec.Size
	if size <= 0 {
		size = 64
	}
	payload := make([]byte, size)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{payload}
	}
	pcs := make([]*ipv4.PacketConn, len(conns))
	for i, c := range conns {
		pcs[i] = ipv4.NewPacketConn(c)
	}
	var interval time.Duration
	if l.spec.Rate > 0 {
		interval = time.Second * batch / time.Duration(l.spec.Rate)
	}
	next := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		n, err := pcs[i%len(pcs)].WriteBatch(msgs, 0)
		if err != nil {
			// ECONNREFUSED and ENOBUFS are expected under flood and toggles.
			l.errors.Add(1)
			if n <= 0 {
				time.Sleep(time.Millisecond)
				continue
			}
		}
		l.count(n)
		if interval > 0 {
			next = next.Add(interval)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

func (a *agent) stopLoad(name string) (*wire.LoadStats, error) {
	a.mu.Lock()
	l, ok := a.loads[name]
	delete(a.loads, name)
	a.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no load %q running", name)
	}
	// Stop first so the counts include everything the load did.
	l.cancel()
	<-l.done
	return l.stats(), nil
}

func (a *agent) stopAll() {
	a.mu.Lock()
	names := make([]string, 0, len(a.loads))
	for n := range a.loads {
		names = append(names, n)
	}
	a.mu.Unlock()
	for _, n := range names {
		a.stopLoad(n)
	}
}
