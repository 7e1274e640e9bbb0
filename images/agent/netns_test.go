package agent

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// testAgent returns an agent that knows one private netns, "t", holding the
// veth pair va/vb, or skips when this host cannot make one (not root).
func testAgent(t *testing.T) *agent {
	t.Helper()
	var h netns.NsHandle
	err := onThread(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
		var err error
		h, err = netns.Get()
		return err
	})
	if errors.Is(err, unix.EPERM) {
		t.Skipf("needs root for a private netns: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	nh, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "va"}, PeerName: "vb"}
	if err := nh.LinkAdd(veth); err != nil {
		t.Skipf("no veth on this host: %v", err)
	}
	for _, n := range []string{"va", "vb"} {
		l, err := nh.LinkByName(n)
		if err == nil {
			err = nh.LinkSetUp(l)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	a := newAgent()
	a.ns.byName["t"] = h
	return a
}
