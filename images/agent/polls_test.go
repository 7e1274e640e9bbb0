package agent

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"napilab/internal/nsthread"
	"napilab/results/metrics"
)

// TestPollCounterHost loads and attaches the who-polled programs on this
// host's kernel (the verifier checks them) and sees a veth NAPI polled in
// softirq with its RX queue named from the packets it returned.
func TestPollCounterHost(t *testing.T) {
	if testing.Short() {
		t.Skip("attaches BPF programs to the host kernel")
	}
	if _, err := os.Stat(tracefsDir + "/events/napi/napi_poll"); err != nil {
		t.Skipf("no tracefs with napi:napi_poll at %s: %v", tracefsDir, err)
	}
	a := testAgent(t)
	// vb moves to a second namespace "u" so that traffic crosses the pair.
	var u netns.NsHandle
	err := nsthread.Run(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
		var err error
		u, err = netns.Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	a.ns.byName["u"] = u
	err = a.ns.in("t", func() error {
		l, err := netlink.LinkByName("vb")
		if err == nil {
			err = netlink.LinkSetNsFd(l, int(u))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ns, dev, addr string }{{"t", "va", "10.9.0.1/24"}, {"u", "vb", "10.9.0.2/24"}} {
		err := a.ns.in(c.ns, func() error {
			l, err := netlink.LinkByName(c.dev)
			if err != nil {
				return err
			}
			addr, _ := netlink.ParseAddr(c.addr)
			if err := netlink.AddrAdd(l, addr); err != nil {
				return err
			}
			return netlink.LinkSetUp(l)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// GRO on the receiving end gives veth a NAPI; UDP GRO forwarding makes
	// a socket's datagrams from a TSO-capable peer eligible for it
	// (veth_skb_is_eligible_for_gro), else they take the backlog.
	for _, f := range []string{"rx-gro", "rx-udp-gro-forwarding"} {
		if err := a.ns.feature("u", "vb", f, true); err != nil {
			t.Fatal(err)
		}
	}
	defer a.polls.close()
	if _, err := a.polls.read(); err != nil {
		t.Fatal(err)
	}
	rx, err := listenIn(a, "u", "10.9.0.2:9")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	err = a.ns.in("t", func() error {
		tx, err := net.Dial("udp", "10.9.0.2:9")
		if err != nil {
			return err
		}
		defer tx.Close()
		for range 200 {
			if _, err := tx.Write([]byte("napilab")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text, err := a.polls.read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("napi_polls:\n%s", text)
	lines, err := metrics.ParsePolls(text)
	if err != nil {
		t.Fatal(err)
	}
	var polls, pkts uint64
	for _, l := range lines {
		// rx-0 needs the 6.1-6.12 napi_struct layout to tell veth's poll
		// function; a newer host kernel shows the NAPI by address.
		if l.Dev == "vb" && l.Context == "softirq" {
			polls += l.Polls
			pkts += l.Packets
		}
	}
	if polls == 0 || pkts < 200 {
		t.Errorf("vb rx-0: %d polls returning %d packets, want softirq polls returning >= 200 packets in:\n%s", polls, pkts, text)
	}
	if strings.Contains(text, "? ") {
		t.Errorf("a NAPI without a device name:\n%s", text)
	}
}

// listenIn opens a UDP socket inside netns ns.
func listenIn(a *agent, ns, addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := a.ns.in(ns, func() error {
		var err error
		c, err = net.ListenPacket("udp", addr)
		return err
	})
	return c, err
}

func TestNapiOffPoll(t *testing.T) {
	for release, want := range map[string]int32{
		"6.1.192": 40, "6.12.117": 40, "6.14.0-rc1": 40, "6.15.2": 32, "7.3.4": 32, "garbage": 40,
	} {
		if got := napiOffPoll(release); got != want {
			t.Errorf("napiOffPoll(%q) = %d, want %d", release, got, want)
		}
	}
}
