package agent

import (
	"net"
	"testing"
	"time"

	"napilab/internal/wire"
)

// freePort returns a loopback port nothing listens on right now for network
// (tcp4 or udp4).
func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "tcp4" {
		l, err := net.Listen(network, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	c, err := net.ListenPacket(network, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// runLoads starts specs in order through the agent, lets them run for d,
// then stops them in reverse order (senders before sinks) and returns their
// stats by name.
func runLoads(t *testing.T, a *agent, d time.Duration, specs ...wire.Load) map[string]*wire.LoadStats {
	t.Helper()
	for i, s := range specs {
		if err := a.startLoad(s); err != nil {
			for _, s := range specs[:i] {
				a.stopLoad(s.Name)
			}
			t.Fatalf("start %s: %v", s.Name, err)
		}
	}
	time.Sleep(d)
	stats := map[string]*wire.LoadStats{}
	for i := len(specs) - 1; i >= 0; i-- {
		t0 := time.Now()
		st, err := a.stopLoad(specs[i].Name)
		if err != nil {
			t.Fatalf("stop %s: %v", specs[i].Name, err)
		}
		if took := time.Since(t0); took > time.Second {
			t.Errorf("stop %s took %v", specs[i].Name, took)
		}
		stats[specs[i].Name] = st
	}
	return stats
}

func TestTCPSendSink(t *testing.T) {
	port := freePort(t, "tcp4")
	for _, tc := range []struct {
		name        string
		flows, rate int
		cpu         int
	}{
		{"flat out, 2 flows", 2, 0, -1},
		{"paced 2000/s, pinned", 2, 2000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent()
			st := runLoads(t, a, 500*time.Millisecond,
				wire.Load{Name: "sink", Kind: wire.LoadTCPSink, Addr: "127.0.0.1", Port: port, CPU: tc.cpu},
				wire.Load{Name: "send", Kind: wire.LoadTCPSend, Addr: "127.0.0.1", Port: port,
					Flows: tc.flows, Rate: tc.rate, CPU: tc.cpu})
			send, sink := st["send"], st["sink"]
			t.Logf("send %d writes %d bytes, sink %d reads %d bytes", send.Packets, send.Bytes, sink.Packets, sink.Bytes)
			if send.Packets == 0 || send.Bytes == 0 || sink.Packets == 0 || sink.Bytes == 0 {
				t.Errorf("nothing moved: send %+v sink %+v", send, sink)
			}
			// A write the stop cut short counts its bytes but not itself.
			if send.Bytes < send.Packets*tcpWriteSize || send.Bytes > (send.Packets+uint64(tc.flows))*tcpWriteSize {
				t.Errorf("send %d bytes in %d full writes of %d", send.Bytes, send.Packets, tcpWriteSize)
			}
			if send.Errors+sink.Errors != 0 {
				t.Errorf("errors: send %d sink %d", send.Errors, sink.Errors)
			}
			if tc.rate > 0 && (send.Packets < 500 || send.Packets > 1300) {
				t.Errorf("%d writes in 0.5 s at %d/s", send.Packets, tc.rate)
			}
		})
	}
}

func TestTCPSendReconnects(t *testing.T) {
	a := newAgent()
	port := freePort(t, "tcp4")
	send := wire.Load{Name: "send", Kind: wire.LoadTCPSend, Addr: "127.0.0.1", Port: port, Size: 1000, CPU: -1}
	if err := a.startLoad(send); err != nil {
		t.Fatal(err)
	}
	defer a.stopAll()
	time.Sleep(100 * time.Millisecond) // refused, every retryDelay
	st := runLoads(t, a, 200*time.Millisecond,
		wire.Load{Name: "sink", Kind: wire.LoadTCPSink, Addr: "127.0.0.1", Port: port, CPU: -1})
	sendSt, err := a.stopLoad("send")
	if err != nil {
		t.Fatal(err)
	}
	if sendSt.Errors == 0 || sendSt.Packets == 0 || st["sink"].Bytes == 0 {
		t.Errorf("send %d errors %d writes, sink %d bytes: want all > 0", sendSt.Errors, sendSt.Packets, st["sink"].Bytes)
	}
}

func TestLoadSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec wire.Load
	}{
		{"rr bad proto", wire.Load{Kind: wire.LoadRRClient, Addr: "127.0.0.1", Port: 9, Proto: "sctp"}},
		{"rr udp too big", wire.Load{Kind: wire.LoadRRServer, Port: 9, Size: 70000}},
		{"sender without addr", wire.Load{Kind: wire.LoadTCPSend, Port: 9}},
		{"sink bad port", wire.Load{Kind: wire.LoadTCPSink, Port: 70000}},
		{"unknown netns", wire.Load{Kind: wire.LoadTCPSink, Port: freePort(t, "tcp4"), Netns: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent()
			tc.spec.Name = "x"
			if err := a.startLoad(tc.spec); err == nil {
				a.stopLoad("x")
				t.Fatal("started, want an error")
			} else {
				t.Log(err)
			}
			if len(a.loads) != 0 {
				t.Errorf("loads after a failed start: %v", a.loads)
			}
		})
	}
}

// sinkAndSender starts a udp sink named "sink" on loopback (rcvBuf: its
// SO_RCVBUFFORCE, 0 the default) and returns a socket that sends to it.
func sinkAndSender(t *testing.T, a *agent, rcvBuf int) *net.UDPConn {
	t.Helper()
	port := freePort(t, "udp4")
	sink := wire.Load{Name: "sink", Kind: wire.LoadUDPSink, Addr: "127.0.0.1", Port: port, CPU: -1, RcvBuf: rcvBuf}
	if err := a.startLoad(sink); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		a.stopLoad("sink")
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A stopped UDP sink reads what its socket still holds before it closes
// it: every datagram loopback delivered before the stop is counted.
func TestUDPSinkDrainsAtStop(t *testing.T) {
	a := newAgent()
	c := sinkAndSender(t, a, 8<<20)
	const n = 3000
	for i := range n {
		if _, err := c.Write([]byte("datagram")); err != nil {
			a.stopLoad("sink")
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	// Loopback queued every datagram on the sink's socket before Write
	// returned; the sink has read some of them.
	st, err := a.stopLoad("sink")
	if err != nil {
		t.Fatal(err)
	}
	if st.Packets != n {
		t.Errorf("the sink counted %d datagrams, want %d", st.Packets, n)
	}
	if st.Undrained {
		t.Error("the sink says it closed its socket before it was empty")
	}
}

// A sink whose socket keeps filling stops after drainMax and says it
// closed it undrained.
func TestUDPSinkUndrained(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for drainMax")
	}
	a := newAgent()
	c := sinkAndSender(t, a, 0)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				c.Write([]byte("datagram"))
			}
		}
	}()
	st, err := a.stopLoad("sink")
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Undrained {
		t.Errorf("a sink flooded through its drain says it emptied its socket (%d datagrams)", st.Packets)
	}
}

// queued asks the kernel what a socket holds: the drain's idle test.
func TestQueued(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := queued(c); n != 0 {
		t.Errorf("an empty socket holds %d", n)
	}
	s, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write([]byte("datagram"))
	if n := queued(c); n != len("datagram") {
		t.Errorf("a socket holding one datagram says %d, want %d", n, len("datagram"))
	}
}
