package agent

import (
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"napilab/internal/wire"
)

// setup builds the scenario topology: sysctls, namespaces, NICs, veths.
func (a *agent) setup(t wire.Topology) error {
	for k, v := range t.Sysctls {
		p := "/proc/sys/" + strings.ReplaceAll(strings.TrimPrefix(k, "/proc/sys/"), ".", "/")
		if err := os.WriteFile(p, []byte(v), 0); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", k, v, err)
		}
	}
	for _, name := range t.Netns {
		if err := a.ns.create(name); err != nil {
			return err
		}
	}
	for _, nic := range t.NICs {
		if err := a.setupNIC(nic); err != nil {
			return fmt.Errorf("nic %s: %w", nic.Name, err)
		}
	}
	for _, v := range t.Veths {
		if err := a.setupVeth(v); err != nil {
			return fmt.Errorf("veth %s/%s: %w", v.A.Name, v.B.Name, err)
		}
	}
	for _, r := range t.Routes {
		if err := a.addRoute(r); err != nil {
			return fmt.Errorf("route to %s via %s in netns %q: %w", r.To, r.Via, r.Netns, err)
		}
	}
	return nil
}

func (a *agent) addRoute(r wire.Route) error {
	dst, via, err := r.Parse()
	if err != nil {
		return err
	}
	h, err := a.ns.handle(r.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	return h.RouteAdd(&netlink.Route{Dst: dst, Gw: via})
}

func (a *agent) setupNIC(nic wire.NIC) error {
	mac, err := net.ParseMAC(nic.MAC)
	if err != nil {
		return err
	}
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	var link netlink.Link
	for _, l := range links {
		if l.Attrs().HardwareAddr.String() == mac.String() {
			link = l
		}
	}
	if link == nil {
		return fmt.Errorf("no device with MAC %s (is virtio-net in the kernel?)", mac)
	}
	if link.Attrs().Name != nic.Name {
		if err := netlink.LinkSetName(link, nic.Name); err != nil {
			return fmt.Errorf("rename %s: %w", link.Attrs().Name, err)
		}
	}
	if nic.Queues > 0 {
		if err := a.ns.channels("", nic.Name, nic.Queues); err != nil {
			return err
		}
	}
	return a.configure("", wire.End{Name: nic.Name, Address: nic.Address, GRO: nic.GRO, Features: nic.Features})
}

func (a *agent) setupVeth(v wire.Veth) error {
	h, err := a.ns.handle(v.A.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = v.A.Name
	if v.Queues > 0 {
		attrs.NumTxQueues, attrs.NumRxQueues = v.Queues, v.Queues
	}
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: v.B.Name}
	if v.Queues > 0 {
		veth.PeerNumTxQueues, veth.PeerNumRxQueues = uint32(v.Queues), uint32(v.Queues)
	}
	if v.B.Netns != v.A.Netns {
		if v.B.Netns == "" {
			return fmt.Errorf("peer in the root namespace must be side a")
		}
		ns, err := a.ns.get(v.B.Netns)
		if err != nil {
			return err
		}
		veth.PeerNamespace = netlink.NsFd(ns)
	}
	if err := h.LinkAdd(veth); err != nil {
		return err
	}
	if err := a.configure(v.A.Netns, v.A); err != nil {
		return err
	}
	if err := a.configure(v.B.Netns, v.B); err != nil {
		return err
	}
	if v.StaticNeigh {
		if err := a.staticNeigh(v.A, v.B); err != nil {
			return err
		}
		return a.staticNeigh(v.B, v.A)
	}
	return nil
}

// staticNeigh adds a permanent neighbour entry on end for the peer's
// address: carrier loss flushes learned entries, and ARP then needs a probe
// to cross a link that may be down again before it answers.
func (a *agent) staticNeigh(end, peer wire.End) error {
	if peer.Address == "" {
		return nil
	}
	ip, _, err := net.ParseCIDR(peer.Address)
	if err != nil {
		return err
	}
	ph, err := a.ns.handle(peer.Netns)
	if err != nil {
		return err
	}
	defer ph.Close()
	pl, err := ph.LinkByName(peer.Name)
	if err != nil {
		return fmt.Errorf("link %s: %w", peer.Name, err)
	}
	h, err := a.ns.handle(end.Netns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(end.Name)
	if err != nil {
		return fmt.Errorf("link %s: %w", end.Name, err)
	}
	n := &netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT, IP: ip, HardwareAddr: pl.Attrs().HardwareAddr}
	if err := h.NeighSet(n); err != nil {
		return fmt.Errorf("static neighbour %s on %s: %w", ip, end.Name, err)
	}
	return nil
}

// configure sets GRO, the address and brings the device up.
func (a *agent) configure(ns string, e wire.End) error {
	h, err := a.ns.handle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(e.Name)
	if err != nil {
		return fmt.Errorf("link %s: %w", e.Name, err)
	}
	if e.GRO != nil {
		if err := a.ns.feature(ns, e.Name, "rx-gro", *e.GRO); err != nil {
			return err
		}
	}
	for _, f := range slices.Sorted(maps.Keys(e.Features)) {
		if err := a.ns.feature(ns, e.Name, f, e.Features[f]); err != nil {
			return err
		}
	}
	if e.Address != "" {
		addr, err := netlink.ParseAddr(e.Address)
		if err != nil {
			return err
		}
		if err := h.AddrAdd(l, addr); err != nil {
			return fmt.Errorf("address %s on %s: %w", e.Address, e.Name, err)
		}
	}
	return h.LinkSetUp(l)
}
