package agent

import (
	"context"
	"net"
)

// Stream buffer sizes.
const (
	tcpReadSize  = 64 << 10 // tcp-sink's read buffer
	tcpWriteSize = 16 << 10 // tcp-send's chunk when Size is 0
)

// startTCPSink listens on Addr:Port and drains every accepted connection,
// counting one packet and its bytes per read.
func startTCPSink(a *agent, ctx context.Context, l *load) error {
	if err := checkAddr(l.spec, true); err != nil {
		return err
	}
	ln, err := a.listen(ctx, l.spec)
	if err != nil {
		return err
	}
	l.serve(ctx, ln, func(c net.Conn) error {
		buf := make([]byte, tcpReadSize)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				l.count(1)
				l.bytes.Add(uint64(n))
			}
			if err != nil {
				return err
			}
		}
	})
	return nil
}

// startTCPSend opens Flows connections to Addr:Port, each writing Size-byte
// chunks as fast as it can, or paced so they make Rate writes/s together.
// A broken connection counts an error and is dialled again.
func startTCPSend(a *agent, ctx context.Context, l *load) error {
	if err := checkAddr(l.spec, false); err != nil {
		return err
	}
	size := l.spec.Size
	if size <= 0 {
		size = tcpWriteSize
	}
	flows := max(l.spec.Flows, 1)
	for range flows {
		l.spawn(func() {
			buf := make([]byte, size)
			p := newPacer(l.spec.Rate, flows)
			a.connected(ctx, l, "tcp", func(c net.Conn) error {
				for p.wait(ctx) {
					n, err := c.Write(buf)
					l.bytes.Add(uint64(n))
					if err != nil {
						return err
					}
					l.count(1)
				}
				return nil
			})
		})
	}
	return nil
}
