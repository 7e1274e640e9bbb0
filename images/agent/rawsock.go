package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// The rr kinds use blocking sockets on their own (pinned) threads rather
// than Go's netpoller, as netperf does: the kernel wakes the thread asleep in
// recv, on its CPU, and SO_BUSY_POLL busy-polls inside that recv. Through the
// netpoller a locked goroutine is woken by way of epoll on another thread and
// a futex hand-off, which added ~45 us to a loopback transaction on a 2-vCPU
// host and would hide the kernel's latency. Each socket belongs to one
// goroutine, which closes it; blocking calls time out every rawTick so the
// goroutine notices a stop.
const (
	rawTick        = 100 * time.Millisecond // SO_RCVTIMEO unless the caller needs another
	rawSendTimeout = time.Second            // SO_SNDTIMEO: bounds connect and a stuck send
)

// rawSocket opens a blocking IPv4 socket (proto udp or tcp) for the load in
// its netns: bound, and listening for tcp, when listener; else connected.
// Reads time out after recvTimeout. The caller closes the fd.
func (a *agent) rawSocket(s wire.Load, proto string, listener bool, recvTimeout time.Duration) (int, error) {
	sa := &unix.SockaddrInet4{Port: s.Port}
	if s.Addr != "" {
		ip := net.ParseIP(s.Addr).To4()
		if ip == nil {
			return -1, fmt.Errorf("bad addr %q, want an IPv4 address", s.Addr)
		}
		sa.Addr = [4]byte(ip)
	}
	typ := unix.SOCK_DGRAM
	if proto == "tcp" {
		typ = unix.SOCK_STREAM
	}
	// Only socket(2) needs the netns: the socket keeps it for good.
	fd := -1
	err := a.ns.in(s.Netns, func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	err = setTimeouts(fd, recvTimeout)
	if err == nil && s.BusyPoll > 0 {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL, s.BusyPoll)
	}
	switch {
	case err != nil:
	case listener:
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		if err == nil {
			err = unix.Bind(fd, sa)
		}
		if err == nil && proto == "tcp" {
			err = unix.Listen(fd, 1024)
		}
	default:
		if proto == "tcp" {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
		if err == nil {
			err = unix.Connect(fd, sa)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s %s (listener %v): %w", proto, hostPort(s), listener, err)
	}
	return fd, nil
}

// setTimeouts sets fd's receive timeout to recv and its send timeout to
// rawSendTimeout.
func setTimeouts(fd int, recv time.Duration) error {
	rtv, stv := unix.NsecToTimeval(recv.Nanoseconds()), unix.NsecToTimeval(rawSendTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &rtv); err != nil {
		return fmt.Errorf("failed to set SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &stv); err != nil {
		return fmt.Errorf("failed to set SO_SNDTIMEO: %w", err)
	}
	return nil
}

// again reports a blocking call that timed out or met a signal (calls on a
// socket with timeouts are not restarted): retry unless ctx has ended.
func again(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}

// rawReadFull fills buf from a stream fd, waiting through timeouts until ctx
// ends. A close before any byte is io.EOF, in the middle io.ErrUnexpectedEOF.
func rawReadFull(ctx context.Context, fd int, buf []byte) error {
	for got := 0; got < len(buf); {
		n, err := unix.Read(fd, buf[got:])
		switch {
		case again(err):
			if ctx.Err() != nil {
				return ctx.Err()
			}
		case err != nil:
			return err
		case n == 0 && got == 0:
			return io.EOF
		case n == 0:
			return io.ErrUnexpectedEOF
		default:
			got += n
		}
	}
	return nil
}

// rawWriteAll writes all of buf to a stream fd, waiting through timeouts
// until ctx ends.
func rawWriteAll(ctx context.Context, fd int, buf []byte) error {
	for len(buf) > 0 {
		// MSG_NOSIGNAL: a reset peer is EPIPE, not a SIGPIPE.
		n, err := unix.SendmsgN(fd, buf, nil, nil, unix.MSG_NOSIGNAL)
		if n > 0 {
			buf = buf[n:]
		}
		if err != nil && !again(err) {
			return err
		}
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// peerGone reports an error that only says the other end closed or reset.
func peerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
}
