package agent

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"napilab/internal/wire"
)

// mountsUnder counts the mounts under dir.
func mountsUnder(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " "+dir+"/")
}

// TestServeOwnNetns: with Options.Netns the agent builds a topology in a
// namespace of its own, not this process's, and leaves no mount behind.
func TestServeOwnNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	dir := t.TempDir()
	host, port := net.Pipe()
	defer host.Close()
	served := make(chan error, 1)
	go func() { served <- Serve(port, Options{Netns: true, RunDir: dir}) }()
	conn := wire.NewConn(host)
	if m, err := conn.Recv(); err != nil || m.Event != wire.EventReady {
		t.Fatalf("first message %+v %v, want the ready event", m, err)
	}
	call := func(op string, args any) *wire.Message {
		t.Helper()
		if err := conn.Send(&wire.Message{ID: 1, Op: op, Args: wire.Encode(args)}); err != nil {
			t.Fatal(err)
		}
		m, err := conn.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	topo := wire.Topology{Netns: []string{"n"}, Veths: []wire.Veth{{A: wire.End{Name: "napilab-va", Address: "10.9.0.1/24"},
		B: wire.End{Name: "napilab-vb", Netns: "n", Address: "10.9.0.2/24"}}}}
	if m := call(wire.OpSetup, topo); m.Error != "" {
		t.Fatalf("setup: %s", m.Error)
	}
	if m := call(wire.OpRead, wire.File{Path: "/sys/class/net/napilab-va/mtu"}); m.Error != "" || string(m.Data) != `"1500\n"` {
		t.Errorf("read the agent's veth: %s %s", m.Data, m.Error)
	}
	if _, err := netlink.LinkByName("napilab-va"); err == nil {
		t.Error("the agent's veth is in this process's namespace")
	}
	if n := mountsUnder(t, dir); n != 2 {
		t.Errorf("%d mounts under the run dir while serving, want the sysfs of the root and of n", n)
	}
	host.Close()
	if err := <-served; err == nil {
		t.Error("Serve returned no error on a closed port")
	}
	if n := mountsUnder(t, dir); n != 0 {
		t.Errorf("%d mounts left under the run dir", n)
	}
}
