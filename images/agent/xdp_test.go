package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

func TestXDPPassInstructions(t *testing.T) {
	spec := xdpPassSpec()
	if spec.Type != ebpf.XDP || spec.License != "GPL" {
		t.Errorf("type %v license %q, want XDP GPL", spec.Type, spec.License)
	}
	var buf bytes.Buffer
	if err := spec.Instructions.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0xb7, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // r0 = 2 (XDP_PASS)
		0x95, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // exit
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("bytecode\n got % x\nwant % x", buf.Bytes(), want)
	}
}

func TestXDPFlags(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want int
	}{{"", 0}, {"native", nl.XDP_FLAGS_DRV_MODE}, {"generic", nl.XDP_FLAGS_SKB_MODE}} {
		got, err := xdpFlags(tc.mode)
		if err != nil || got != tc.want {
			t.Errorf("xdpFlags(%q) = %d, %v; want %d", tc.mode, got, err, tc.want)
		}
	}
	if _, err := xdpFlags("offload"); err == nil {
		t.Error("xdpFlags(offload): no error")
	}
}

// loadable skips unless this host lets the test load a BPF program.
func loadable(t *testing.T) {
	t.Helper()
	p, err := ebpf.NewProgram(xdpPassSpec())
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("cannot load BPF here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// TestXDPAttach attaches, re-attaches in another mode and detaches on a
// veth in a private netns, as the agent does in the guest.
func TestXDPAttach(t *testing.T) {
	loadable(t)
	a := testAgent(t)
	mode := func() uint32 {
		t.Helper()
		var m uint32
		err := a.ns.in("t", func() error {
			l, err := netlink.LinkByName("va")
			if err == nil && l.Attrs().Xdp != nil {
				m = l.Attrs().Xdp.AttachMode
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, step := range []struct {
		x    wire.XDP
		want uint32
	}{
		{wire.XDP{Dev: "va", Netns: "t", Attach: true, Mode: "native"}, nl.XDP_ATTACHED_DRV},
		{wire.XDP{Dev: "va", Netns: "t", Attach: true, Mode: "native"}, nl.XDP_ATTACHED_DRV},
		{wire.XDP{Dev: "va", Netns: "t", Attach: true, Mode: "generic"}, nl.XDP_ATTACHED_SKB},
		{wire.XDP{Dev: "va", Netns: "t"}, nl.XDP_ATTACHED_NONE},
		{wire.XDP{Dev: "va", Netns: "t"}, nl.XDP_ATTACHED_NONE},
		{wire.XDP{Dev: "va", Netns: "t", Attach: true}, nl.XDP_ATTACHED_DRV},
		{wire.XDP{Dev: "va", Netns: "t"}, nl.XDP_ATTACHED_NONE},
	} {
		if err := a.xdp(step.x); err != nil {
			t.Fatalf("%+v: %v", step.x, err)
		}
		if got := mode(); got != step.want {
			t.Fatalf("%+v: attach mode %d, want %d", step.x, got, step.want)
		}
	}
	if n := len(a.xdps.byKey); n != 0 {
		t.Errorf("%d programs kept after detach", n)
	}
	err := a.xdp(wire.XDP{Dev: "nosuch", Netns: "t", Attach: true})
	if err == nil || err.Error() != "xdp attach on nosuch: Link not found" {
		t.Errorf("attach on a missing device: %v", err)
	}
	if n := len(a.xdps.byKey); n != 0 {
		t.Errorf("%d programs kept after a failed attach", n)
	}
}
