package agent

import (
	"errors"
	"napilab/internal/nsthread"
	"strings"
	"sync"
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
	err := nsthread.Run(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
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

// A namespace's /proc/net files are its own: /proc/net follows the main
// thread, not the thread that entered the namespace.
func TestProcNetInNetns(t *testing.T) {
	a := testAgent(t)
	if got, want := a.ns.path("t", "/proc/net/dev"), "/proc/thread-self/net/dev"; got != want {
		t.Errorf("path of /proc/net/dev in netns t = %s, want %s", got, want)
	}
	// Read on several threads at once: the main thread alone would pass.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			in, err := a.read("nsfile:t:/proc/net/dev")
			if err != nil {
				t.Error(err)
			} else if !strings.Contains(in, "va:") || !strings.Contains(in, "vb:") {
				t.Errorf("/proc/net/dev of netns t lacks va and vb:\n%s", in)
			}
		})
	}
	wg.Wait()
	root, err := a.read("netdev")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(root, "va:") {
		t.Errorf("the root's /proc/net/dev lists netns t's va:\n%s", root)
	}
}

// The ethtool source reads a device's ethtool -S counters in its netns.
func TestEthtoolSource(t *testing.T) {
	a := testAgent(t)
	got, err := a.read("ethtool:t:va")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "peer_ifindex ") {
		t.Errorf("ethtool -S va lacks veth's peer_ifindex:\n%s", got)
	}
	if _, err := a.read("ethtool::va"); err == nil {
		t.Error("va read in the root namespace, where it is not")
	}
}
