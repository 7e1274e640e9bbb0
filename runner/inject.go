package runner

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"napilab/internal/wire"
	"napilab/runner/vm"
)

// injector sends UDP from the runner's namespace through a tap into the
// guest NIC. Many source ports spread the flows over the tap's queues, so the
// guest sees RX interrupts and NAPI polls on several virtio queues.
type injector struct {
	sent   atomic.Uint64
	errors atomic.Uint64
	// start and buckets (packets sent per wire.BucketWidthMs from start)
	// are run's alone until stop returns.
	start   time.Time
	buckets []uint64
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startInjector opens flows sockets in the namespace and sends size-byte
// datagrams to dst at rate packets/s in total (0 = as fast as possible).
func startInjector(h *vm.HostNet, dst *net.UDPAddr, flows, size, rate int) (*injector, error) {
	var conns []*net.UDPConn
	err := h.In(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp4", nil, dst)
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	inj := &injector{cancel: cancel}
	inj.wg.Add(1)
	go func() {
		defer inj.wg.Done()
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		inj.run(ctx, conns, size, rate)
	}()
	return inj, nil
}

func (inj *injector) run(ctx context.Context, conns []*net.UDPConn, size, rate int) {
	buf := make([]byte, size)
	var interval time.Duration
	if rate > 0 {
		interval = time.Second / time.Duration(rate)
	}
	next := time.Now()
	inj.start = next
	for i := 0; ctx.Err() == nil; i++ {
		if _, err := conns[i%len(conns)].Write(buf); err != nil {
			inj.errors.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		inj.sent.Add(1)
		b := int(time.Since(inj.start) / (wire.BucketWidthMs * time.Millisecond))
		for len(inj.buckets) <= b {
			inj.buckets = append(inj.buckets, 0)
		}
		inj.buckets[b]++
		if interval > 0 {
			next = next.Add(interval)
			if d := time.Until(next); d > time.Millisecond {
				time.Sleep(d)
			} else if d < -time.Second {
				next = time.Now() // fell behind: do not burst
			}
		}
	}
}

// stop ends the sender and returns what it sent, in all and per bucket.
func (inj *injector) stop() (sent, errors uint64, start time.Time, buckets []uint64) {
	inj.cancel()
	inj.wg.Wait()
	return inj.sent.Load(), inj.errors.Load(), inj.start, inj.buckets
}
