package agent

import (
	"net"
	"strconv"
	"testing"
	"time"

	"napilab/internal/wire"
)

// TestLoadsInNetns runs every new kind inside the private netns "t": the
// sockets must live there (and the root namespace must not see them),
// including the ones a sender dials again after the start.
func TestLoadsInNetns(t *testing.T) {
	a := testAgent(t)
	h, err := a.ns.handle("t")
	if err != nil {
		t.Fatal(err)
	}
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, kinds := range [][3]string{
		{wire.LoadTCPSink, wire.LoadTCPSend, ""},
		{wire.LoadRRServer, wire.LoadRRClient, "tcp"},
		{wire.LoadRRServer, wire.LoadRRClient, "udp"},
	} {
		t.Run(kinds[1]+kinds[2], func(t *testing.T) {
			port := freePort(t, "tcp4")
			rx := wire.Load{Name: "rx", Kind: kinds[0], Netns: "t", Addr: "127.0.0.1", Port: port, CPU: -1, Proto: kinds[2]}
			tx := wire.Load{Name: "tx", Kind: kinds[1], Netns: "t", Addr: "127.0.0.1", Port: port, CPU: 0, Proto: kinds[2]}
			if err := a.startLoad(rx); err != nil {
				t.Fatal(err)
			}
			if c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil && kinds[2] != "udp" {
				c.Close()
				t.Errorf("root namespace reaches the receiver in t")
			}
			st := runLoads(t, a, 200*time.Millisecond, tx)
			rxSt, err := a.stopLoad("rx")
			if err != nil {
				t.Fatal(err)
			}
			if st["tx"].Packets == 0 || rxSt.Packets == 0 || st["tx"].Errors != 0 {
				t.Errorf("in netns t: tx %+v rx %+v", st["tx"], rxSt)
			}
		})
	}
}
