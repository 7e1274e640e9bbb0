package vm

import (
	"fmt"
	"net"
	"os"
	"strings"

	"napilab/internal/nsthread"
	"napilab/internal/sandbox"
	"napilab/internal/wire"

	"github.com/hashicorp/go-multierror"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// HostNet is the host side of the guest's NICs: an anonymous network
// namespace owned by the runner, holding one multi-queue tap per NIC. The
// namespace and taps vanish with the last file descriptor, so even a killed
// runner leaves nothing behind; the host's own network is never touched.
type HostNet struct {
	ns   netns.NsHandle
	taps []*tap
}

// tap is one multi-queue tap; Queues are passed to QEMU.
type tap struct {
	Name   string
	Queues []*os.File
}

// TapSpec describes a tap to create.
type TapSpec struct {
	Name     string // tap device name in the runner's namespace
	Queues   int
	HostAddr string // CIDR on the tap
	GuestIP  string // the guest NIC's address, for a static neighbour entry
	GuestMAC string
}

// NewHostNet creates the namespace, the taps and the routes: static routes
// on the host's side (Netns unused) to the guest's address Via, for a
// network the guest forwards to.
func NewHostNet(specs []TapSpec, routes []wire.Route) (h *HostNet, err error) {
	h = &HostNet{ns: -1}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	err = inNewNetns(func(ns netns.NsHandle) error {
		h.ns = ns
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
		for _, s := range specs {
			t, err := createTap(s)
			if err != nil {
				return err
			}
			h.taps = append(h.taps, t)
		}
		for _, r := range routes {
			if err := addRoute(r); err != nil {
				return fmt.Errorf("host route to %s via %s: %w", r.To, r.Via, err)
			}
		}
		return nil
	})
	return h, err
}

func addRoute(r wire.Route) error {
	dst, via, err := r.Parse()
	if err != nil {
		return err
	}
	return netlink.RouteAdd(&netlink.Route{Dst: dst, Gw: via})
}

// createTap runs inside the namespace.
func createTap(s TapSpec) (*tap, error) {
	tt := &netlink.Tuntap{
		LinkAttrs:  netlink.LinkAttrs{Name: s.Name},
		Mode:       netlink.TUNTAP_MODE_TAP,
		Flags:      netlink.TUNTAP_MULTI_QUEUE_DEFAULTS | netlink.TUNTAP_VNET_HDR,
		Queues:     s.Queues,
		NonPersist: true,
	}
	if sandbox.Active() {
		// QEMU runs as this uid and (de)attaches queues (TUNSETQUEUE)
		// when the guest changes the number it uses.
		tt.Owner, tt.Group = sandbox.UID, sandbox.GID
	}
	if err := netlink.LinkAdd(tt); err != nil {
		return nil, fmt.Errorf("failed to create tap %s with %d queues (is /dev/net/tun there?): %w", s.Name, s.Queues, err)
	}
	t := &tap{Name: s.Name, Queues: tt.Fds}
	link, err := netlink.LinkByName(s.Name)
	if err == nil && s.HostAddr != "" {
		var addr *netlink.Addr
		if addr, err = netlink.ParseAddr(s.HostAddr); err == nil {
			err = netlink.AddrAdd(link, addr)
		}
	}
	if err == nil {
		err = netlink.LinkSetUp(link)
	}
	if err == nil && s.GuestIP != "" {
		var mac net.HardwareAddr
		if mac, err = net.ParseMAC(s.GuestMAC); err == nil {
			err = netlink.NeighSet(&netlink.Neigh{LinkIndex: link.Attrs().Index, State: netlink.NUD_PERMANENT,
				IP: net.ParseIP(s.GuestIP), HardwareAddr: mac})
		}
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("failed to configure tap %s: %w", s.Name, err)
	}
	return t, nil
}

// inNewNetns runs fn inside a fresh network namespace.
func inNewNetns(fn func(netns.NsHandle) error) error {
	return nsthread.Run(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("failed to create a network namespace (root needed): %w", err)
		}
		return nil
	}, func() error {
		ns, err := netns.Get()
		if err != nil {
			return err
		}
		return fn(ns)
	})
}

// In runs fn inside the runner's namespace.
func (h *HostNet) In(fn func() error) error {
	return nsthread.Run(func() error { return netns.Set(h.ns) }, fn)
}

// Counters reads what the taps dropped on the host's side: a line per tap,
// "<tap> tx_dropped N qdisc_drops M" (a full tun ring; its root qdiscs).
func (h *HostNet) Counters() (string, error) {
	var lines []string
	err := h.In(func() error {
		for _, t := range h.taps {
			l, err := netlink.LinkByName(t.Name)
			if err != nil {
				return err
			}
			var tx uint64
			if st := l.Attrs().Statistics; st != nil {
				tx = st.TxDropped
			}
			qs, err := netlink.QdiscList(l)
			if err != nil {
				return err
			}
			var drops uint64
			for _, q := range qs {
				if a := q.Attrs(); a.Parent == netlink.HANDLE_ROOT && a.Statistics != nil && a.Statistics.Queue != nil {
					drops += uint64(a.Statistics.Queue.Drops)
				}
			}
			lines = append(lines, fmt.Sprintf("%s tx_dropped %d qdisc_drops %d", t.Name, tx, drops))
		}
		return nil
	})
	return strings.Join(lines, "\n"), err
}

func (t *tap) close() error {
	var errs *multierror.Error
	for _, f := range t.Queues {
		if err := f.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	t.Queues = nil
	return errs.ErrorOrNil()
}

// Queues are each tap's queue files, in the order of the specs: QEMU's
// NIC backends.
func (h *HostNet) Queues() [][]*os.File {
	q := make([][]*os.File, len(h.taps))
	for i, t := range h.taps {
		q[i] = t.Queues
	}
	return q
}

// Close drops the taps and the namespace.
func (h *HostNet) Close() error {
	var errs *multierror.Error
	for _, t := range h.taps {
		if err := t.close(); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if h.ns >= 0 {
		if err := h.ns.Close(); err != nil {
			errs = multierror.Append(errs, err)
		}
		h.ns = -1
	}
	return errs.ErrorOrNil()
}
