package agent

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// lackError says the kernel lacks a netlink family or command: the
// scenario asked this kernel for something it does not have (ERROR, not a
// kernel FAIL: there is no errno of a refusal to tolerate).
type lackError struct{ what string }

func (e lackError) Error() string { return "the kernel lacks " + e.what }

// netdevConn is a generic netlink socket talking to the netdev family, in
// the network namespace of the thread that opened it.
type netdevConn struct {
	c   *genetlink.Conn
	fam genlFamily
}

// dialNetdev opens the socket and resolves the family and its commands.
func dialNetdev() (*netdevConn, error) {
	// Strict asks for extended acks: the kernel's own reason for a refusal.
	c, err := genetlink.Dial(&netlink.Config{Strict: true})
	if err != nil {
		return nil, fmt.Errorf("failed to open a generic netlink socket: %w", err)
	}
	fam, err := getFamily(c, "netdev")
	if err != nil {
		c.Close()
		return nil, err
	}
	return &netdevConn{c: c, fam: fam}, nil
}

func (n *netdevConn) Close() error { return n.c.Close() }

// getFamily asks the controller for a family; genetlink's GetFamily drops
// the commands, which say what this kernel's family can do.
func getFamily(c *genetlink.Conn, name string) (genlFamily, error) {
	b, err := encodeGetFamily(name)
	if err != nil {
		return genlFamily{}, err
	}
	req := genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_GETFAMILY, Version: 1}, Data: b}
	msgs, err := c.Execute(req, unix.GENL_ID_CTRL, netlink.Request)
	switch {
	case errors.Is(err, unix.ENOENT):
		return genlFamily{}, lackError{"the " + name + " generic netlink family (6.1 has none; it came in 6.3)"}
	case err != nil:
		return genlFamily{}, fmt.Errorf("failed to look up the %s family: %w", name, err)
	case len(msgs) != 1:
		return genlFamily{}, fmt.Errorf("the controller answered %d messages for the %s family, want 1", len(msgs), name)
	}
	return decodeFamily(msgs[0].Data)
}

// netdevCmdNames names the commands for errors.
var netdevCmdNames = map[uint8]string{netdevCmdQueueGet: "queue-get", netdevCmdNAPIGet: "napi-get", netdevCmdNAPISet: "napi-set (6.12 has none)"}

// need fails when the kernel's netdev family lacks a command.
func (n *netdevConn) need(cmd uint8) error {
	if !n.fam.ops[uint32(cmd)] {
		return lackError{"netdev " + netdevCmdNames[cmd]}
	}
	return nil
}

// dump runs a dump command with a filter and returns the answers' attributes.
func (n *netdevConn) dump(cmd uint8, filter []byte) ([][]byte, error) {
	if err := n.need(cmd); err != nil {
		return nil, err
	}
	req := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: 1}, Data: filter}
	msgs, err := n.c.Execute(req, n.fam.id, netlink.Request|netlink.Dump)
	if err != nil {
		return nil, fmt.Errorf("netdev %s dump failed: %w", netdevCmdNames[cmd], err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Data
	}
	return out, nil
}

// napis lists the NAPIs of a device (ifindex > 0) or of every device (0).
func (n *netdevConn) napis(ifindex uint32) ([]napiInfo, error) {
	var filter []byte
	if ifindex > 0 {
		var err error
		if filter, err = encodeIfindex(napiAttrIfindex, ifindex); err != nil {
			return nil, err
		}
	}
	answers, err := n.dump(netdevCmdNAPIGet, filter)
	if err != nil {
		return nil, err
	}
	var out []napiInfo
	for _, b := range answers {
		ni, err := decodeNAPI(b)
		if err != nil {
			return nil, err
		}
		if ifindex == 0 || ni.val[napiAttrIfindex] == uint64(ifindex) {
			out = append(out, ni)
		}
	}
	return out, nil
}

// queues lists the queues of a device (or every device, 0) with the NAPI
// each is linked to; none when the kernel has no queue-get.
func (n *netdevConn) queues(ifindex uint32) ([]queueInfo, error) {
	if n.need(netdevCmdQueueGet) != nil {
		return nil, nil
	}
	var filter []byte
	if ifindex > 0 {
		var err error
		if filter, err = encodeIfindex(queueAttrIfindex, ifindex); err != nil {
			return nil, err
		}
	}
	answers, err := n.dump(netdevCmdQueueGet, filter)
	if err != nil {
		return nil, err
	}
	out := make([]queueInfo, 0, len(answers))
	for _, b := range answers {
		q, err := decodeQueue(b)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// set sends napi-set for one NAPI and waits for the kernel's ack.
func (n *netdevConn) set(id uint32, s wire.NAPI) error {
	if err := n.need(netdevCmdNAPISet); err != nil {
		return err
	}
	b, err := encodeNAPISet(id, s)
	if err != nil {
		return err
	}
	req := genetlink.Message{Header: genetlink.Header{Command: netdevCmdNAPISet, Version: 1}, Data: b}
	_, err = n.c.Execute(req, n.fam.id, netlink.Request|netlink.Acknowledge)
	return err
}

// napiSetHint says which kernel a refused napi-set setting needs: the
// kernel validates attributes it does not know as unknown (EINVAL) and
// enum values past its last one as out of range (ERANGE).
func napiSetHint(err error, s wire.NAPI) string {
	switch {
	case errors.Is(err, unix.ERANGE) && s.Threaded == wire.NAPIThreadedBusyPoll:
		return " (threaded busy-poll needs 6.19: upstream c18d4b190a46)"
	case errors.Is(err, unix.EINVAL) && s.Threaded != "" && strings.Contains(err.Error(), "Unknown attribute"):
		return " (napi-set takes threaded from 6.17 on)"
	}
	return ""
}

// hasNAPISetting says whether a napi step changes anything.
func hasNAPISetting(s wire.NAPI) bool {
	return s.Threaded != "" || s.DeferHardIRQs != nil || s.GROFlushTimeout != nil || s.IRQSuspendTimeout != nil
}

// napi changes the NAPIs of s.Dev (or the one serving s.Queue) with
// napi-set and returns their ids. A refusal keeps the kernel's errno.
func (a *agent) napi(s wire.NAPI) ([]uint32, error) {
	if !hasNAPISetting(s) {
		return nil, fmt.Errorf("napi on %s: no setting to change", s.Dev)
	}
	if s.Threaded != "" {
		if _, err := napiThreaded(s.Threaded); err != nil {
			return nil, err
		}
	}
	var ids []uint32
	err := a.ns.in(s.Netns, func() error {
		ifi, err := net.InterfaceByName(s.Dev)
		if err != nil {
			return fmt.Errorf("failed to find device %s: %w", s.Dev, err)
		}
		c, err := dialNetdev()
		if err != nil {
			return err
		}
		defer c.Close()
		napis, err := c.napis(uint32(ifi.Index))
		if err != nil {
			return err
		}
		var queues []queueInfo
		if s.Queue != nil {
			if queues, err = c.queues(uint32(ifi.Index)); err != nil {
				return err
			}
		}
		if ids, err = selectNAPIs(s.Dev, napis, queues, s.Queue); err != nil {
			return err
		}
		for _, id := range ids {
			if err := c.set(id, s); err != nil {
				return fmt.Errorf("napi-set of NAPI %d of %s failed: %w%s", id, s.Dev, err, napiSetHint(err, s))
			}
		}
		return nil
	})
	return ids, err
}

// napiStats lists every NAPI of netns ns ("" = root) with what napi-get
// reports, one line each in the format of wire.SourceNAPI.
func (a *agent) napiStats(ns string) (string, error) {
	var lines []string
	err := a.ns.in(ns, func() error {
		ifs, err := net.Interfaces()
		if err != nil {
			return fmt.Errorf("failed to list devices: %w", err)
		}
		c, err := dialNetdev()
		if err != nil {
			return err
		}
		defer c.Close()
		napis, err := c.napis(0)
		if err != nil {
			return err
		}
		queues, err := c.queues(0)
		if err != nil {
			return err
		}
		lines = napiLines(ifs, napis, queues)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("failed to read the NAPIs of netns %q: %w", ns, err)
	}
	return strings.Join(lines, "\n"), nil
}

// napiLines writes the NAPIs of each device as napi source lines, by device
// and name; NAPIs of devices not in ifs are left out.
func napiLines(ifs []net.Interface, napis []napiInfo, queues []queueInfo) []string {
	type group struct {
		napis  []napiInfo
		queues []queueInfo
	}
	byIndex := map[uint32]*group{}
	for _, n := range napis {
		i := uint32(n.val[napiAttrIfindex])
		if byIndex[i] == nil {
			byIndex[i] = &group{}
		}
		byIndex[i].napis = append(byIndex[i].napis, n)
	}
	for _, q := range queues {
		if g := byIndex[q.ifindex]; g != nil {
			g.queues = append(g.queues, q)
		}
	}
	var lines []string
	sort.Slice(ifs, func(i, j int) bool { return ifs[i].Name < ifs[j].Name })
	for _, ifi := range ifs {
		g := byIndex[uint32(ifi.Index)]
		if g == nil {
			continue
		}
		names := napiNames(g.napis, g.queues)
		sort.Slice(g.napis, func(i, j int) bool { return g.napis[i].id() < g.napis[j].id() })
		for _, n := range g.napis {
			lines = append(lines, n.line(ifi.Name, names[n.id()]))
		}
	}
	return lines
}
