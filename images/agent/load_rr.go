package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/net/ipv4"

	"napilab/images/wire"
)

const (
	rrDefaultSize = 64                     // request and response bytes when Size is 0
	rrMaxUDP      = 65507                  // largest UDP payload over IPv4
	rrTimeout     = 200 * time.Millisecond // a UDP response later than this is lost
)

// rrSpec returns the rr kinds' protocol, udp (the default) or tcp, and the
// request size. Server and client must be given the same Size for tcp; a
// udp request carries a sequence number in its first 8 bytes.
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
// to its sender; a tcp connection gets each Size-byte request back.
func startRRServer(a *agent, ctx context.Context, l *load) error {
	proto, size, err := rrSpec(l.spec, true)
	if err != nil {
		return err
	}
	if proto == "tcp" {
		ln, err := a.listen(ctx, l.spec)
		if err != nil {
			return err
		}
		l.serve(ctx, ln, func(c net.Conn) error { return l.tcpEcho(c, size) })
		return nil
	}
	var c *net.UDPConn
	err = a.ns.in(l.spec.Netns, func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.spec.Addr), Port: l.spec.Port})
		return err
	})
	if err != nil {
		return err
	}
	c.SetReadBuffer(4 << 20)
	if l.spec.BusyPoll > 0 {
		if err := setBusyPoll(c, l.spec.BusyPoll); err != nil {
			c.Close()
			return err
		}
	}
	context.AfterFunc(ctx, func() { c.Close() })
	l.spawn(func() { l.udpEcho(ctx, c) })
	return nil
}

// tcpEcho reads size-byte requests from c and writes each back until c
// closes, one transaction each.
func (l *load) tcpEcho(c net.Conn, size int) error {
	buf := make([]byte, size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
		l.bytes.Add(2 * uint64(size))
		l.count(1)
	}
}

// udpEcho sends every datagram on c back to its sender, up to batch at a
// time (recvmmsg, sendmmsg), one transaction each.
func (l *load) udpEcho(ctx context.Context, c *net.UDPConn) {
	pc := ipv4.NewPacketConn(c)
	in, out := make([]ipv4.Message, batch), make([]ipv4.Message, batch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, rrMaxUDP)}
		out[i].Buffers = make([][]byte, 1)
	}
	for ctx.Err() == nil {
		n, err := pc.ReadBatch(in, 0)
		if err != nil {
			if ctx.Err() == nil {
				l.errors.Add(1)
				sleep(ctx, time.Millisecond)
			}
			continue
		}
		for i := range n {
			out[i].Buffers[0], out[i].Addr = in[i].Buffers[0][:in[i].N], in[i].Addr
			l.bytes.Add(2 * uint64(in[i].N))
		}
		sent := 0
		for sent < n {
			k, err := pc.WriteBatch(out[sent:n], 0)
			if err != nil {
				l.errors.Add(1)
				break
			}
			sent += k
		}
		l.count(sent)
	}
}

// startRRClient runs Flows clients, each with its own socket, doing one
// request/response at a time: back to back, or paced so they make Rate
// transactions/s together. Each latency runs from just before the send to
// the end of the response. Pacing does not correct for coordinated
// omission: a slow response delays the next request.
func startRRClient(a *agent, ctx context.Context, l *load) error {
	proto, size, err := rrSpec(l.spec, false)
	if err != nil {
		return err
	}
	l.lat = newHist()
	flows := max(l.spec.Flows, 1)
	if proto == "tcp" {
		for range flows {
			l.spawn(func() {
				p := newPacer(l.spec.Rate, flows)
				req, resp := make([]byte, size), make([]byte, size)
				a.connected(ctx, l, "tcp", func(c net.Conn) error {
					for p.wait(ctx) {
						t0 := time.Now()
						if _, err := c.Write(req); err != nil {
							return err
						}
						if _, err := io.ReadFull(c, resp); err != nil {
							return err
						}
						l.transaction(time.Since(t0), 2*size)
					}
					return nil
				})
			})
		}
		return nil
	}
	// udp sockets open now, so a bad address fails the start.
	conns := make([]net.Conn, 0, flows)
	for range flows {
		c, err := a.dial(ctx, l.spec, "udp4")
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		context.AfterFunc(ctx, func() { c.Close() })
		l.spawn(func() { l.udpClient(ctx, c, size, newPacer(l.spec.Rate, flows)) })
	}
	return nil
}

// udpClient does one request at a time on c. A response missing after
// rrTimeout counts an error and is given up; a late one for an earlier
// request is skipped by its sequence number.
func (l *load) udpClient(ctx context.Context, c net.Conn, size int, p *pacer) {
	req, resp := make([]byte, size), make([]byte, rrMaxUDP)
	for seq := uint64(1); p.wait(ctx); seq++ {
		binary.LittleEndian.PutUint64(req, seq)
		t0 := time.Now()
		c.SetReadDeadline(t0.Add(rrTimeout))
		_, err := c.Write(req)
		for err == nil {
			var n int
			n, err = c.Read(resp)
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
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			sleep(ctx, retryDelay) // ECONNREFUSED from an ICMP port unreachable returns at once
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
