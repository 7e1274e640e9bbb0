package agent

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

const (
	rrDefaultSize = 64                     // request and response bytes when Size is 0
	rrMaxUDP      = 65507                  // largest UDP payload over IPv4
	rrTimeout     = 200 * time.Millisecond // a UDP response later than this is lost
)

// rrSpec validates an rr load and returns its protocol, udp (the default)
// or tcp, and its request size. Server and client must be given the same
// Size for tcp; a udp request carries a sequence number in its first 8
// bytes and the server echoes whatever arrives.
func rrSpec(s wire.Load, listener bool) (proto string, size int, err error) {
	if err := checkAddr(s, listener); err != nil {
		return "", 0, err
	}
	size = s.Size
	if size <= 0 {
		size = rrDefaultSize
	}
	switch s.Proto {
	case "", "udp":
		if size > rrMaxUDP {
			return "", 0, fmt.Errorf("bad size %d for udp, want [0-%d]", size, rrMaxUDP)
		}
		return "udp", max(size, 8), nil
	case "tcp":
		return "tcp", size, nil
	}
	return "", 0, fmt.Errorf("bad proto %q, want udp or tcp", s.Proto)
}

// startRRServer echoes requests on Addr:Port: every udp datagram goes back
// to its sender; every tcp connection gets each Size-byte request back. A
// transaction is one echo. The clients own transaction errors: a peer that
// closes or resets only ends its connection here.
func startRRServer(a *agent, ctx context.Context, l *load) error {
	proto, size, err := rrSpec(l.spec, true)
	if err != nil {
		return err
	}
	fd, err := a.rawSocket(l.spec, proto, true, rawTick)
	if err != nil {
		return err
	}
	if proto == "udp" {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		l.spawn(func() { l.udpEcho(ctx, fd) })
		return nil
	}
	l.spawn(func() {
		defer unix.Close(fd)
		for ctx.Err() == nil {
			c, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
			if again(err) {
				continue
			}
			if err == nil && l.spec.BusyPoll > 0 {
				err = unix.SetsockoptInt(c, unix.SOL_SOCKET, unix.SO_BUSY_POLL, l.spec.BusyPoll)
			}
			if err == nil {
				err = setTimeouts(c, rawTick)
			}
			if err != nil {
				if c >= 0 {
					unix.Close(c)
				}
				l.errors.Add(1)
				sleep(ctx, retryDelay)
				continue
			}
			l.spawn(func() {
				defer unix.Close(c)
				if err := l.tcpEcho(ctx, c, size); err != nil && !peerGone(err) && ctx.Err() == nil {
					l.errors.Add(1)
				}
			})
		}
	})
	return nil
}

// tcpEcho reads size-byte requests from fd and writes each back until the
// peer closes or ctx ends.
func (l *load) tcpEcho(ctx context.Context, fd, size int) error {
	buf := make([]byte, size)
	for ctx.Err() == nil {
		if err := rawReadFull(ctx, fd, buf); err != nil {
			return err
		}
		if err := rawWriteAll(ctx, fd, buf); err != nil {
			return err
		}
		l.bytes.Add(2 * uint64(size))
		l.count(1)
	}
	return nil
}

// udpEcho sends every datagram on fd back to its sender until ctx ends,
// then closes fd.
func (l *load) udpEcho(ctx context.Context, fd int) {
	defer unix.Close(fd)
	buf := make([]byte, rrMaxUDP)
	for ctx.Err() == nil {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if again(err) {
			continue
		}
		if err == nil {
			err = unix.Sendto(fd, buf[:n], 0, from)
		}
		if err != nil {
			l.errors.Add(1)
			sleep(ctx, time.Millisecond)
			continue
		}
		l.bytes.Add(2 * uint64(n))
		l.count(1)
	}
}
