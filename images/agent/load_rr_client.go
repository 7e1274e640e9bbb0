package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// startRRClient runs Flows clients, each on its own socket, doing one
// request/response at a time: back to back, or paced so they make Rate
// transactions/s together. A latency runs from just before the send to the
// end of the response. Pacing does not correct for coordinated omission: a
// slow response delays the next request.
func startRRClient(a *agent, ctx context.Context, l *load) error {
	proto, size, err := rrSpec(l.spec, false)
	if err != nil {
		return err
	}
	if l.spec.OpenLoop && (proto != "udp" || l.spec.Rate <= 0) {
		return fmt.Errorf("an open-loop rr client needs udp and a rate")
	}
	l.lat = newHist()
	flows := max(l.spec.Flows, 1)
	if proto == "tcp" {
		for range flows {
			l.spawn(func() { l.tcpClient(ctx, a, size, newPacer(l.spec.Rate, flows)) })
		}
		return nil
	}
	// udp sockets open now, so a bad address fails the start.
	fds := make([]int, 0, flows)
	for range flows {
		fd, err := a.rawSocket(l.spec, proto, false, rrTimeout)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return err
		}
		fds = append(fds, fd)
	}
	for _, fd := range fds {
		if l.spec.OpenLoop {
			o := &openLoop{l: l, fd: fd, size: max(size, 16), start: time.Now()}
			l.spawn(func() { o.receive(ctx) })
			l.spawn(func() { o.send(ctx, newPacer(l.spec.Rate, flows)) })
			continue
		}
		l.spawn(func() { l.udpClient(ctx, fd, size, newPacer(l.spec.Rate, flows)) })
	}
	return nil
}

// tcpClient runs transactions on a connection, and on a new one after any
// error (counted) and retryDelay, until ctx ends.
func (l *load) tcpClient(ctx context.Context, a *agent, size int, p *pacer) {
	req, resp := make([]byte, size), make([]byte, size)
	for ctx.Err() == nil {
		fd, err := a.rawSocket(l.spec, "tcp", false, rawTick)
		for err == nil && p.wait(ctx) {
			t0 := time.Now()
			if err = rawWriteAll(ctx, fd, req); err == nil {
				err = rawReadFull(ctx, fd, resp)
			}
			if err == nil {
				l.transaction(time.Since(t0), 2*size)
			}
		}
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil && ctx.Err() == nil {
			l.errors.Add(1)
			sleep(ctx, retryDelay)
		}
	}
}

// udpClient does one request at a time on fd until ctx ends, then closes
// fd. A response missing for rrTimeout counts an error and is given up; a
// late one for an earlier request is skipped by its sequence number.
func (l *load) udpClient(ctx context.Context, fd, size int, p *pacer) {
	defer unix.Close(fd)
	req, resp := make([]byte, size), make([]byte, rrMaxUDP)
	for seq := uint64(1); p.wait(ctx); seq++ {
		binary.LittleEndian.PutUint64(req, seq)
		t0 := time.Now()
		err := unix.Send(fd, req, 0)
		for err == nil || errors.Is(err, unix.EINTR) {
			// EINTR restarts the wait (calls on a socket with a timeout are
			// not restarted after a signal); EAGAIN is the timeout.
			var n int
			n, err = unix.Read(fd, resp)
			if err == nil && n >= 8 && binary.LittleEndian.Uint64(resp) == seq {
				break
			}
		}
		if err == nil {
			l.transaction(time.Since(t0), 2*size)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		l.errors.Add(1)
		if !again(err) {
			sleep(ctx, retryDelay) // ECONNREFUSED after an ICMP port unreachable comes at once
		}
	}
}

// transaction counts one request/response that took d and moved bytes.
// The latency and the packet count change together under l.mu, so stats
// always has Latency.Count == Packets.
func (l *load) transaction(d time.Duration, bytes int) {
	l.bytes.Add(uint64(bytes))
	l.mu.Lock()
	l.lat.Record(d)
	l.countLocked(1)
	l.mu.Unlock()
}

// openLoop is one flow of an open-loop udp client: requests leave on the
// pacer's schedule whether or not answers came, so a slow answer does not
// hold back the requests behind it. Each carries its sequence number and
// its send time: a latency runs from the send, not from when it was due,
// since the client shares the guest and its own lateness in waking (a
// busy-polling column starves it) is not the answer's. A request still
// unanswered rrTimeout after the load stops counts as an error.
type openLoop struct {
	l         *load
	fd, size  int
	start     time.Time
	sent, got atomic.Uint64
}

// send sends a request whenever one is due until ctx ends.
func (o *openLoop) send(ctx context.Context, p *pacer) {
	req := make([]byte, o.size)
	for seq := uint64(1); ; seq++ {
		if !p.wait(ctx) {
			return
		}
		binary.LittleEndian.PutUint64(req, seq)
		binary.LittleEndian.PutUint64(req[8:], uint64(time.Since(o.start)))
		if err := unix.Send(o.fd, req, 0); err != nil {
			o.l.errors.Add(1)
			continue
		}
		o.sent.Add(1)
	}
}

// receive records each answer's latency until ctx ends and the answers
// still due have come or had rrTimeout to come, then counts the requests
// left unanswered and closes the socket.
func (o *openLoop) receive(ctx context.Context) {
	defer unix.Close(o.fd)
	resp := make([]byte, rrMaxUDP)
	var deadline time.Time
	for {
		if ctx.Err() != nil {
			if deadline.IsZero() {
				deadline = time.Now().Add(rrTimeout)
			}
			if o.got.Load() >= o.sent.Load() || time.Now().After(deadline) {
				break
			}
		}
		n, err := unix.Read(o.fd, resp)
		if err != nil || n < 16 {
			continue // the socket's timeout lets ctx be seen; a runt is no answer
		}
		sent := time.Duration(binary.LittleEndian.Uint64(resp[8:]))
		o.got.Add(1)
		o.l.transaction(time.Since(o.start)-sent, 2*o.size)
	}
	if sent, got := o.sent.Load(), o.got.Load(); sent > got {
		o.l.errors.Add(sent - got)
	}
}
