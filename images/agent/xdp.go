package agent

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"napilab/internal/wire"
)

// xdpPass is the XDP_PASS verdict.
const xdpPass = 2

func init() {
	// Let package-level netlink calls (XDP attach) carry the kernel's extack
	// text, e.g. "veth: Peer MTU is too large to set XDP".
	nl.EnableErrorMessageReporting = true
}

// xdpPassSpec is a program that passes every packet.
func xdpPassSpec() *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:    "napilab_pass",
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, xdpPass),
			asm.Return(),
		},
	}
}

// xdpFlags maps a wire.XDP mode to IFLA_XDP_FLAGS.
func xdpFlags(mode string) (int, error) {
	switch mode {
	case "":
		return 0, nil
	case "native":
		return nl.XDP_FLAGS_DRV_MODE, nil
	case "generic":
		return nl.XDP_FLAGS_SKB_MODE, nil
	}
	return 0, fmt.Errorf("bad xdp mode %q, want native, generic or empty", mode)
}

// xdpProg is a loaded program and the flags it was attached with; a detach
// must use the same mode or the kernel detaches nothing.
type xdpProg struct {
	prog  *ebpf.Program
	flags int
}

// xdpState keeps one program per netns and device.
type xdpState struct {
	mu    sync.Mutex
	byKey map[string]*xdpProg
}

// xdp attaches or detaches the XDP_PASS program on x.Dev.
func (a *agent) xdp(x wire.XDP) error {
	flags, err := xdpFlags(x.Mode)
	if err != nil {
		return err
	}
	s := &a.xdps
	s.mu.Lock()
	defer s.mu.Unlock()
	key := x.Netns + "/" + x.Dev
	cur := s.byKey[key]
	if !x.Attach {
		if cur != nil {
			flags = cur.flags
		}
		if err := a.ns.in(x.Netns, func() error { return setXDP(x.Dev, -1, flags) }); err != nil {
			return fmt.Errorf("xdp detach on %s: %w", x.Dev, err)
		}
		if cur != nil {
			cur.prog.Close()
			delete(s.byKey, key)
		}
		return nil
	}
	kept := cur != nil && cur.flags == flags // attached and staying so
	if cur != nil && cur.flags != flags {
		// The kernel refuses native and generic at once: leave the old mode.
		if err := a.ns.in(x.Netns, func() error { return setXDP(x.Dev, -1, cur.flags) }); err != nil {
			return fmt.Errorf("xdp detach on %s: %w", x.Dev, err)
		}
	}
	if cur == nil {
		_ = raiseMemlock() // without effect under memcg accounting (5.11+)
		prog, err := ebpf.NewProgram(xdpPassSpec())
		if err != nil {
			return fmt.Errorf("xdp load for %s: %w", x.Dev, err)
		}
		cur = &xdpProg{prog: prog, flags: flags}
	}
	if err := a.ns.in(x.Netns, func() error { return setXDP(x.Dev, cur.prog.FD(), flags) }); err != nil {
		if !kept {
			cur.prog.Close()
			delete(s.byKey, key)
		}
		return fmt.Errorf("xdp attach on %s: %w", x.Dev, err)
	}
	cur.flags = flags
	if s.byKey == nil {
		s.byKey = map[string]*xdpProg{}
	}
	s.byKey[key] = cur
	return nil
}

// setXDP sets fd (-1 = none) as dev's XDP program in the calling thread's
// netns: netlink v1.3 has no Handle method for it.
func setXDP(dev string, fd, flags int) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	return netlink.LinkSetXdpFdWithFlags(l, fd, flags)
}
