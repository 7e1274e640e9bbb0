package agent

import (
	"encoding/binary"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
)

func TestRR(t *testing.T) {
	for _, tc := range []struct {
		name, proto       string
		flows, rate, size int
		cpu, busyPoll     int
	}{
		{"udp closed loop", "udp", 1, 0, 0, -1, 0},
		{"udp default proto paced 4 flows pinned", "", 4, 2000, 200, 1, 0},
		{"udp closed loop busy poll", "udp", 1, 0, 0, -1, 50},
		{"tcp closed loop", "tcp", 1, 0, 0, -1, 0},
		{"tcp closed loop 2 flows pinned busy poll", "tcp", 2, 0, 1000, 0, 50},
		{"tcp paced 4 flows", "tcp", 4, 2000, 0, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.busyPoll > 0 && os.Geteuid() != 0 {
				t.Skip("raising SO_BUSY_POLL needs CAP_NET_ADMIN")
			}
			a := newAgent()
			port := freePort(t, "tcp4")
			if tc.proto != "tcp" {
				port = freePort(t, "udp4")
			}
			st := runLoads(t, a, 500*time.Millisecond,
				wire.Load{Name: "srv", Kind: wire.LoadRRServer, Addr: "127.0.0.1", Port: port,
					Size: tc.size, CPU: tc.cpu, Proto: tc.proto, BusyPoll: tc.busyPoll},
				wire.Load{Name: "cli", Kind: wire.LoadRRClient, Addr: "127.0.0.1", Port: port,
					Flows: tc.flows, Rate: tc.rate, Size: tc.size, CPU: tc.cpu, Proto: tc.proto})
			cli, srv := st["cli"], st["srv"]
			l := cli.Latency
			if l == nil {
				t.Fatalf("client has no latency: %+v", cli)
			}
			t.Logf("%d transactions, %d errors, latency p50 %.1fus p90 %.1fus p99 %.1fus p99.9 %.1fus max %.1fus",
				cli.Packets, cli.Errors, l.P50, l.P90, l.P99, l.P999, l.Max)
			if cli.Packets == 0 || cli.Bytes == 0 || srv.Packets == 0 || srv.Bytes == 0 {
				t.Errorf("nothing moved: client %+v server %+v", cli, srv)
			}
			if l.Count != cli.Packets {
				t.Errorf("latency count %d, want the %d transactions", l.Count, cli.Packets)
			}
			if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
				t.Errorf("want 0 < p50 <= p99 <= max: %+v", l)
			}
			if cli.Errors+srv.Errors != 0 {
				t.Errorf("errors: client %d server %d", cli.Errors, srv.Errors)
			}
			if srv.Latency != nil {
				t.Errorf("server has latency %+v", srv.Latency)
			}
			if tc.rate > 0 && (cli.Packets < uint64(tc.rate)/4 || cli.Packets > uint64(tc.rate)*2/3) {
				t.Errorf("%d transactions in 0.5 s at %d/s", cli.Packets, tc.rate)
			}
		})
	}
}

func TestRRUDPWithoutServer(t *testing.T) {
	a := newAgent()
	port := freePort(t, "udp4")
	st := runLoads(t, a, 300*time.Millisecond,
		wire.Load{Name: "cli", Kind: wire.LoadRRClient, Addr: "127.0.0.1", Port: port, CPU: -1, Proto: "udp"})
	cli := st["cli"]
	if cli.Errors == 0 || cli.Packets != 0 || cli.Latency == nil || cli.Latency.Count != 0 {
		t.Errorf("client without server: %+v latency %+v, want errors and no transactions", cli, cli.Latency)
	}
}

// lossyEcho echoes UDP requests on c but drops every 50th; the next reply
// after a drop is preceded by a late reply to the dropped request.
func lossyEcho(c *net.UDPConn) {
	buf := make([]byte, 2048)
	var dropped []byte
	for {
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if binary.LittleEndian.Uint64(buf)%50 == 10 {
			dropped = append([]byte(nil), buf[:n]...)
			continue
		}
		if dropped != nil {
			c.WriteToUDP(dropped, from)
			dropped = nil
		}
		c.WriteToUDP(buf[:n], from)
	}
}

func TestRRUDPLoss(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go lossyEcho(srv)
	a := newAgent()
	st := runLoads(t, a, 1500*time.Millisecond, wire.Load{Name: "cli", Kind: wire.LoadRRClient,
		Addr: "127.0.0.1", Port: srv.LocalAddr().(*net.UDPAddr).Port, CPU: -1, Proto: "udp"})
	cli := st["cli"]
	t.Logf("%d transactions, %d lost, latency %+v", cli.Packets, cli.Errors, cli.Latency)
	// Every 50th request is lost (and stalls the client rrTimeout): one
	// loss per 49 transactions, however fast the host runs them.
	if cli.Errors < 1 || cli.Errors > cli.Packets/49+1 || cli.Packets < 49*(cli.Errors-1) || cli.Latency.Count != cli.Packets {
		t.Errorf("want one loss per 49 transactions (at least one), latency count == transactions")
	}
	if cli.Latency.Max >= float64(rrTimeout/time.Microsecond) {
		t.Errorf("max latency %v us: a lost request was recorded", cli.Latency.Max)
	}
}

func TestRRTCPReconnects(t *testing.T) {
	a := newAgent()
	port := freePort(t, "tcp4")
	cli := wire.Load{Name: "cli", Kind: wire.LoadRRClient, Addr: "127.0.0.1", Port: port, CPU: -1, Proto: "tcp"}
	if err := a.startLoad(cli); err != nil {
		t.Fatal(err)
	}
	defer a.stopAll()
	time.Sleep(100 * time.Millisecond) // refused, every retryDelay
	srv := wire.Load{Name: "srv", Kind: wire.LoadRRServer, Addr: "127.0.0.1", Port: port, CPU: -1, Proto: "tcp"}
	if err := a.startLoad(srv); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	a.stopLoad("srv") // resets the connection: the client counts it and dials again
	if took := time.Since(t0); took > time.Second {
		t.Errorf("stop of a busy server took %v", took)
	}
	time.Sleep(50 * time.Millisecond)
	st := runLoads(t, a, 200*time.Millisecond, srv)
	cliSt, err := a.stopLoad("cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("client %d transactions %d errors, second server %d", cliSt.Packets, cliSt.Errors, st["srv"].Packets)
	if cliSt.Errors < 5 || st["srv"].Packets == 0 || cliSt.Latency.Count != cliSt.Packets {
		t.Errorf("want refusals, then transactions with the second server, latency count == transactions")
	}
}

// delayedEcho answers each UDP request on c after d, without waiting for
// earlier answers, and drops every dropEvery-th request (0: none).
func delayedEcho(c *net.UDPConn, d time.Duration, dropEvery uint64) {
	for n := uint64(1); ; n++ {
		buf := make([]byte, 2048)
		k, from, err := c.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if dropEvery > 0 && n%dropEvery == 0 {
			continue
		}
		time.AfterFunc(d, func() { c.WriteToUDP(buf[:k], from) })
	}
}

func TestRROpenLoop(t *testing.T) {
	const rate, delay = 1000, 20 * time.Millisecond
	for _, tc := range []struct {
		name      string
		open      bool
		dropEvery uint64
		// transactions in 0.5 s at 1000/s with a 20 ms server
		minTx, maxTx uint64
		minErrors    uint64
		maxErrors    uint64 // answers in flight at the stop still land
	}{
		// One request in flight: 20 ms each caps 0.5 s at 25.
		{name: "closed loop waits for each answer", minTx: 10, maxTx: 26},
		// Requests leave on schedule (about 500), each answered 20 ms later;
		// a tenth dropped are the errors, the rest land after the stop.
		{name: "open loop keeps the rate", open: true, minTx: 200, maxTx: 510},
		{name: "open loop counts lost answers", open: true, dropEvery: 10, minTx: 200, maxTx: 460, minErrors: 20,
			maxErrors: 52},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			go delayedEcho(srv, delay, tc.dropEvery)
			st := runLoads(t, newAgent(), 500*time.Millisecond, wire.Load{Name: "cli", Kind: wire.LoadRRClient,
				Addr: "127.0.0.1", Port: srv.LocalAddr().(*net.UDPAddr).Port, CPU: -1, Proto: "udp",
				Rate: rate, OpenLoop: tc.open})
			cli := st["cli"]
			t.Logf("%d transactions, %d errors, latency p50 %.0fus max %.0fus", cli.Packets, cli.Errors,
				cli.Latency.P50, cli.Latency.Max)
			if cli.Packets < tc.minTx || cli.Packets > tc.maxTx {
				t.Errorf("%d transactions, want %d-%d", cli.Packets, tc.minTx, tc.maxTx)
			}
			if cli.Errors < tc.minErrors || cli.Errors > tc.maxErrors {
				t.Errorf("%d errors, want %d-%d", cli.Errors, tc.minErrors, tc.maxErrors)
			}
			if cli.Latency.Count != cli.Packets || cli.Latency.P50 < float64(delay/time.Microsecond) {
				t.Errorf("latency %+v: want one per transaction, p50 >= the server's %v", cli.Latency, delay)
			}
		})
	}
}

func TestRROpenLoopNeedsRate(t *testing.T) {
	a := newAgent()
	err := a.startLoad(wire.Load{Name: "cli", Kind: wire.LoadRRClient, Addr: "127.0.0.1", Port: 9, CPU: -1,
		Proto: "udp", OpenLoop: true})
	if err == nil || !strings.Contains(err.Error(), "needs udp and a rate") {
		t.Errorf("open loop without a rate: %v", err)
	}
	a.stopAll()
}
