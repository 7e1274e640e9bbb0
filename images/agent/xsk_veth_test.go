package agent

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"napilab/internal/nsthread"
	"napilab/internal/wire"
)

// xskAgent returns an agent with the veth pair split across two private
// namespaces: va (10.77.0.1) in "t", where the socket binds, and vb
// (10.77.0.2) in "p", where the traffic comes from. It skips where the host
// cannot (not root, no veth, no BPF).
func xskAgent(t *testing.T) *agent {
	t.Helper()
	loadable(t)
	a := testAgent(t)
	var hp netns.NsHandle
	err := nsthread.Run(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
		var err error
		hp, err = netns.Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hp.Close() })
	a.ns.byName["p"] = hp
	th, err := a.ns.handle("t")
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	vb, err := th.LinkByName("vb")
	if err == nil {
		err = th.LinkSetNsFd(vb, int(hp))
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ ns, dev, addr string }{{"t", "va", "10.77.0.1/24"}, {"p", "vb", "10.77.0.2/24"}} {
		h, err := a.ns.handle(e.ns)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		l, err := h.LinkByName(e.dev)
		var addr *netlink.Addr
		if err == nil {
			addr, err = netlink.ParseAddr(e.addr)
		}
		if err == nil {
			err = h.AddrAdd(l, addr)
		}
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if lo, lerr := h.LinkByName("lo"); err == nil && lerr == nil {
			err = h.LinkSetUp(lo)
		}
		if err != nil {
			t.Fatalf("%s in %s: %v", e.dev, e.ns, err)
		}
	}
	return a
}

func xskLoad(port int, x wire.XSK) wire.Load {
	x.Dev = "va"
	return wire.Load{Name: "xsk", Kind: wire.LoadXSK, Netns: "t", Addr: "10.77.0.1", Port: port, CPU: -1, XSK: &x}
}

// TestXSKSinkOnVeth floods va's queue 0 from p: the socket must get the
// datagrams (nothing listens on the port in t, so only the socket can count
// them) in copy mode, whether it waits in poll() or spins, and a zero-copy
// request on veth (no ndo_xsk_wakeup) must fall back to copy mode and say so.
func TestXSKSinkOnVeth(t *testing.T) {
	a := xskAgent(t)
	for _, tc := range []struct {
		name    string
		x       wire.XSK
		refused bool
	}{
		{"blocking", wire.XSK{Mode: wire.XSKSink}, false},
		{"poll", wire.XSK{Mode: wire.XSKSink, Receive: wire.XSKPoll, Batch: 8}, false},
		{"busy, zero-copy asked", wire.XSK{Mode: wire.XSKSink, Receive: wire.XSKBusy, ZeroCopy: true, XDPMode: "native"}, true},
		{"generic xdp", wire.XSK{Mode: wire.XSKSink, XDPMode: "generic"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := xskLoad(9100, tc.x)
			tx := wire.Load{Name: "tx", Kind: wire.LoadUDPSend, Netns: "p", Addr: "10.77.0.1", Port: 9100, Rate: 5000, Size: 100, CPU: -1}
			st := runLoads(t, a, 500*time.Millisecond, rx, tx)
			got, sent := st["xsk"], st["tx"]
			t.Logf("sent %d, socket got %d: %+v", sent.Packets, got.Packets, got.XSK)
			if got.Packets == 0 || got.Packets > sent.Packets {
				t.Fatalf("socket got %d frames of %d sent (%+v)", got.Packets, sent.Packets, got.XSK)
			}
			if want := got.Packets * (14 + 20 + 8 + 100); got.Bytes != want {
				t.Errorf("bytes %d, want %d for %d frames", got.Bytes, want, got.Packets)
			}
			x := got.XSK
			if x == nil || x.Bound != "copy" {
				t.Fatalf("xsk stats %+v, want bound in copy mode", x)
			}
			if tc.refused != (x.ZeroCopyRefused != "") {
				t.Errorf("zero-copy refusal %q, asked %v", x.ZeroCopyRefused, tc.x.ZeroCopy)
			}
			if want := map[string]string{"generic": "generic"}[tc.x.XDPMode]; want == "" && x.XDPMode != "native" || want != "" && x.XDPMode != want {
				t.Errorf("xdp attached %q, asked %q", x.XDPMode, tc.x.XDPMode)
			}
			if x.RxInvalid != 0 {
				t.Errorf("%d invalid rx descriptors", x.RxInvalid)
			}
			assertNoXDP(t, a)
		})
	}
}

// TestXSKResponderOnVeth runs the rr client in p against the responder on
// va: every transaction is a request the socket answered on its tx ring, and
// the client's kernel took the answer (its UDP checksum verified, its ports
// and addresses those of a reply).
func TestXSKResponderOnVeth(t *testing.T) {
	a := xskAgent(t)
	cpu := 0
	for _, tc := range []struct {
		name string
		x    wire.XSK
		busy int
	}{
		{"blocking", wire.XSK{Mode: wire.XSKRR}, 0},
		{"poll, batch 1", wire.XSK{Mode: wire.XSKRR, Receive: wire.XSKPoll, Batch: 1}, 0},
		{"busy with busy-poll options and a delay", wire.XSK{Mode: wire.XSKRR, Receive: wire.XSKBusy, AppDelayNs: 20000,
			PreferBusyPoll: true, BusyPollBudget: 16}, 50},
		{"busy, kicks from another thread", wire.XSK{Mode: wire.XSKRR, Receive: wire.XSKBusy, PollCPU: &cpu}, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rx := xskLoad(7100, tc.x)
			rx.BusyPoll = tc.busy
			cl := wire.Load{Name: "cl", Kind: wire.LoadRRClient, Netns: "p", Addr: "10.77.0.1", Port: 7100, Flows: 2, Size: 64, CPU: -1}
			st := runLoads(t, a, 500*time.Millisecond, rx, cl)
			got, c := st["xsk"], st["cl"]
			t.Logf("client %d transactions, latency %+v; socket %d answers, %+v", c.Packets, c.Latency, got.Packets, got.XSK)
			if c.Packets == 0 || c.Latency == nil || c.Latency.Count != c.Packets {
				t.Fatalf("client: %d transactions, latency %+v, %d errors", c.Packets, c.Latency, c.Errors)
			}
			if got.Packets < c.Packets {
				t.Errorf("socket answered %d, client completed %d", got.Packets, c.Packets)
			}
			if got.Errors != 0 {
				t.Errorf("responder counted %d errors", got.Errors)
			}
			if d := time.Duration(tc.x.AppDelayNs); d > 0 && c.Latency.P5 < float64(d.Microseconds()) {
				t.Errorf("p5 %.1fus below the %v application delay", c.Latency.P5, d)
			}
			assertNoXDP(t, a)
		})
	}
}

// assertNoXDP checks that the stopped load took its program off va.
func assertNoXDP(t *testing.T, a *agent) {
	t.Helper()
	err := a.ns.in("t", func() error {
		l, err := netlink.LinkByName("va")
		if err == nil && l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached {
			t.Errorf("va still has XDP program %d after the stop", l.Attrs().Xdp.ProgId)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestXSKProgramFilter runs the program on frames with a socket in the map:
// the UDP datagrams to the port are redirected, everything else passes.
func TestXSKProgramFilter(t *testing.T) {
	a := xskAgent(t)
	var x *xsk
	err := a.ns.in("t", func() error {
		l, err := netlink.LinkByName("va")
		if err == nil {
			x, err = openXSK(xskConfig{ifindex: l.Attrs().Index})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Put(uint32(0), uint32(x.fd)); err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgram(xskProgSpec(m, 7000))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	const redirect = 4
	edit := func(off int, b ...byte) []byte {
		f := mustHex(t, testRequest)
		copy(f[off:], b)
		return f
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		want  uint32
	}{
		{"udp to the port", mustHex(t, testRequest), redirect},
		{"other port", edit(36, 0x1b, 0x59), xdpPass},
		{"arp", edit(12, 0x08, 0x06), xdpPass},
		{"tcp", edit(23, 6), xdpPass},
		{"ip options", edit(14, 0x46), xdpPass},
		{"first fragment", edit(20, 0x20, 0x00), xdpPass},
		{"later fragment", edit(20, 0x00, 0x10), xdpPass},
		{"too short for the port", mustHex(t, testRequest)[:37], xdpPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := prog.Run(&ebpf.RunOptions{Data: tc.frame})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("action %d, want %d", got, tc.want)
			}
		})
	}
}

// TestXSKBusyDevice: an XDP program already on the device makes the start
// fail with the kernel's reason, and leaves that program in place.
func TestXSKBusyDevice(t *testing.T) {
	a := xskAgent(t)
	if err := a.xdp(wire.XDP{Dev: "va", Netns: "t", Attach: true}); err != nil {
		t.Fatal(err)
	}
	err := a.startLoad(xskLoad(9200, wire.XSK{Mode: wire.XSKSink}))
	if err == nil {
		a.stopLoad("xsk")
		t.Fatal("started over another XDP program")
	}
	if !strings.Contains(err.Error(), "attach xdp on va") {
		t.Errorf("error %q does not say where", err)
	}
	err = a.ns.in("t", func() error {
		l, err := netlink.LinkByName("va")
		if err == nil && (l.Attrs().Xdp == nil || !l.Attrs().Xdp.Attached) {
			t.Error("the xdp action's program is gone")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.xdp(wire.XDP{Dev: "va", Netns: "t"}); err != nil {
		t.Fatal(err)
	}
}

// TestXSKQueueNamed floods va's queue 0 into an AF_XDP socket: its frames
// never reach GRO, so the who-polled counter names va's NAPI rx-0 from the
// xdp_do_redirect kprobe (without it, rx@<address>).
func TestXSKQueueNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("attaches BPF programs to the host kernel")
	}
	if _, err := os.Stat(tracefsDir + "/events/napi/napi_poll"); err != nil {
		t.Skipf("no tracefs with napi:napi_poll at %s: %v", tracefsDir, err)
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err != nil {
		t.Skipf("the host kernel has no kprobe PMU (CONFIG_KPROBE_EVENTS): %v", err)
	}
	a := xskAgent(t)
	defer a.polls.close()
	if _, err := a.polls.read(); err != nil {
		t.Fatal(err)
	}
	rx := xskLoad(9100, wire.XSK{Mode: wire.XSKSink, XDPMode: "native"})
	tx := wire.Load{Name: "tx", Kind: wire.LoadUDPSend, Netns: "p", Addr: "10.77.0.1", Port: 9100, Rate: 5000, Size: 100, CPU: -1}
	if st := runLoads(t, a, 500*time.Millisecond, rx, tx); st["xsk"].Packets == 0 {
		t.Fatalf("the socket got nothing: %+v", st["xsk"])
	}
	text, err := a.polls.read()
	if err != nil {
		t.Fatal(err)
	}
	// Every queue named: the per-packet tracepoint goes, the kprobe stays
	// until close (removing it under traffic hung a TCG guest).
	if _, err := a.polls.read(); err != nil {
		t.Fatal(err)
	}
	if a.polls.xdpLink == nil {
		t.Errorf("the xdp_do_redirect kprobe was detached while the run goes on")
	}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[0] == "va" && f[1] == "rx-0" && f[6] != "0" {
			return
		}
	}
	t.Errorf("no va rx-0 returning frames in:\n%s", text)
}
