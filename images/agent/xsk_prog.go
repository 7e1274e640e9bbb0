package agent

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// xdp_md field offsets.
const (
	xdpMDData     = 0
	xdpMDDataEnd  = 4
	xdpMDRxQueue  = 16
	udpDstPortEnd = ethLen + ipv4MinLen + 4 // the bytes the program reads
)

// netShort is how a 16-bit load from the packet sees the network-order v.
func netShort(v uint16) int32 {
	return int32(binary.NativeEndian.Uint16(binary.BigEndian.AppendUint16(nil, v)))
}

// xskProgSpec redirects IPv4 UDP datagrams to port (no IP options, not
// fragments) to the socket of their RX queue in xsks; everything else, ARP
// included, goes on to the stack, so the kernel still answers for the
// address. A queue with no socket passes too (redirect_map's fallback).
func xskProgSpec(xsks *ebpf.Map, port uint16) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:    "napilab_xsk",
		Type:    ebpf.XDP,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R7, asm.R1, xdpMDRxQueue, asm.Word),
			asm.LoadMem(asm.R2, asm.R1, xdpMDData, asm.Word),
			asm.LoadMem(asm.R3, asm.R1, xdpMDDataEnd, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, udpDstPortEnd),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Half), // ethertype
			asm.JNE.Imm(asm.R5, netShort(0x0800), "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethLen, asm.Byte), // version and IHL
			asm.JNE.Imm(asm.R5, 0x45, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethLen+9, asm.Byte), // protocol
			asm.JNE.Imm(asm.R5, 17, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethLen+6, asm.Half), // flags, fragment offset
			asm.And.Imm(asm.R5, netShort(0x3fff)),           // MF or an offset: a fragment
			asm.JNE.Imm(asm.R5, 0, "pass"),
			asm.LoadMem(asm.R5, asm.R2, ethLen+ipv4MinLen+2, asm.Half), // UDP destination port
			asm.JNE.Imm(asm.R5, netShort(port), "pass"),
			asm.LoadMapPtr(asm.R1, xsks.FD()),
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Mov.Imm(asm.R3, xdpPass),
			asm.FnRedirectMap.Call(),
			asm.Return(),
			asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
			asm.Return(),
		},
	}
}

// xskAttachFlags maps an xsk load's xdp_mode to the link's attach flags.
func xskAttachFlags(mode string) (link.XDPAttachFlags, error) {
	switch mode {
	case "":
		return 0, nil
	case "native":
		return link.XDPDriverMode, nil
	case "generic":
		return link.XDPGenericMode, nil
	}
	return 0, fmt.Errorf("bad xdp mode %q, want native, generic or empty", mode)
}

// xskProg is the map, program and link that feed one socket.
type xskProg struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	link link.Link
	mode string // how the kernel attached it: native or generic
}

// attachXSKProg puts fd in an XSKMAP at queue and attaches the redirecting
// program to dev as a BPF link (closing it detaches; an XDP program already
// on dev makes it fail with EBUSY rather than replace it). It runs in the
// caller's netns, which must be dev's.
func attachXSKProg(dev string, queue, port, fd int, mode string) (*xskProg, error) {
	flags, err := xskAttachFlags(mode)
	if err != nil {
		return nil, err
	}
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", dev, err)
	}
	_ = raiseMemlock() // without effect under memcg accounting (5.11+)
	p := &xskProg{}
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	p.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4,
		MaxEntries: uint32(queue) + 1})
	if err != nil {
		return nil, fmt.Errorf("xskmap: %w", err)
	}
	if err := p.xsks.Put(uint32(queue), uint32(fd)); err != nil {
		return nil, fmt.Errorf("xskmap put queue %d: %w", queue, err)
	}
	if p.prog, err = ebpf.NewProgram(xskProgSpec(p.xsks, uint16(port))); err != nil {
		return nil, fmt.Errorf("load xdp program: %w", err)
	}
	p.link, err = link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: l.Attrs().Index, Flags: flags})
	if err != nil {
		return nil, fmt.Errorf("attach xdp on %s: %w", dev, err)
	}
	p.mode = attachedMode(dev)
	ok = true
	return p, nil
}

// attachedMode reads back how dev's XDP program runs.
func attachedMode(dev string) string {
	l, err := netlink.LinkByName(dev)
	if err != nil || l.Attrs().Xdp == nil {
		return "unknown"
	}
	switch l.Attrs().Xdp.AttachMode {
	case nl.XDP_ATTACHED_DRV:
		return "native"
	case nl.XDP_ATTACHED_SKB:
		return "generic"
	case nl.XDP_ATTACHED_HW:
		return "offload"
	}
	return "unknown"
}

// close detaches the program and frees the map.
func (p *xskProg) close() {
	if p.link != nil {
		p.link.Close()
	}
	if p.prog != nil {
		p.prog.Close()
	}
	if p.xsks != nil {
		p.xsks.Close()
	}
}
