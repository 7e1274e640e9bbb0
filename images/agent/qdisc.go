package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// qdiscKinds are the root qdiscs the qdisc action can set.
var qdiscKinds = []string{"pfifo", "pfifo_fast", "fq_codel", "mq", "noqueue"}

// qdisc adds, replaces or deletes the root qdisc of q.Dev; the kernel picks
// the handle, so a replace by another kind swaps the qdisc and a replace by
// the same kind changes it in place.
func (a *agent) qdisc(q wire.Qdisc) error {
	var flags int
	switch q.Op {
	case wire.QdiscAdd:
		flags = unix.NLM_F_CREATE | unix.NLM_F_EXCL
	case wire.QdiscReplace:
		flags = unix.NLM_F_CREATE | unix.NLM_F_REPLACE
	case wire.QdiscDelete:
		if q.Kind != "" || q.Limit != 0 {
			return fmt.Errorf("qdisc delete on %s takes no kind or limit", q.Dev)
		}
	default:
		return fmt.Errorf("bad qdisc op %q, want add, replace or delete", q.Op)
	}
	if q.Op != wire.QdiscDelete && !slices.Contains(qdiscKinds, q.Kind) {
		return fmt.Errorf("bad qdisc kind %q, want %s", q.Kind, strings.Join(qdiscKinds, ", "))
	}
	if q.Limit != 0 && q.Kind != "pfifo" && q.Kind != "fq_codel" {
		return fmt.Errorf("qdisc %s takes no limit", q.Kind)
	}
	err := a.ns.in(q.Netns, func() error {
		l, err := netlink.LinkByName(q.Dev)
		if err != nil {
			return fmt.Errorf("failed to find device: %w", err)
		}
		attrs := netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_ROOT}
		switch {
		case q.Op == wire.QdiscDelete:
			return netlink.QdiscDel(&netlink.GenericQdisc{QdiscAttrs: attrs})
		case q.Kind == "pfifo" && q.Limit != 0:
			return fifoModify(flags, attrs.LinkIndex, q.Limit)
		case q.Kind == "fq_codel":
			fq := netlink.NewFqCodel(attrs)
			fq.Limit = q.Limit
			return qdiscModify(flags, fq)
		}
		return qdiscModify(flags, &netlink.GenericQdisc{QdiscAttrs: attrs, QdiscType: q.Kind})
	})
	if err == nil {
		return nil
	}
	if q.Kind == "mq" && errors.Is(err, unix.EOPNOTSUPP) {
		err = fmt.Errorf("%w (mq needs a device with several TX queues)", err)
	}
	if q.Op == wire.QdiscDelete {
		return fmt.Errorf("failed to delete the root qdisc of %s: %w", q.Dev, err)
	}
	return fmt.Errorf("failed to %s the root qdisc of %s with %s: %w", q.Op, q.Dev, q.Kind, err)
}

// qdiscModify adds (NLM_F_EXCL) or replaces (NLM_F_REPLACE) a qdisc.
func qdiscModify(flags int, q netlink.Qdisc) error {
	if flags&unix.NLM_F_EXCL != 0 {
		return netlink.QdiscAdd(q)
	}
	return netlink.QdiscReplace(q)
}

// fifoModify sends what `tc qdisc add|replace dev D root pfifo limit N`
// sends: netlink v1.3 has no pfifo type that carries options.
func fifoModify(flags, index int, limit uint32) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, flags|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(index), Parent: netlink.HANDLE_ROOT})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("pfifo")))
	req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, nl.Uint32Attr(limit))) // struct tc_fifo_qopt
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// qdiscStats lists every qdisc of netns ns ("" = root) with its
// statistics, one line each in the format of wire.SourceQdisc.
func (a *agent) qdiscStats(ns string) (string, error) {
	var qs []qdiscMsg
	names := map[int32]string{}
	err := a.ns.in(ns, func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return fmt.Errorf("failed to list devices: %w", err)
		}
		for _, l := range links {
			names[int32(l.Attrs().Index)] = l.Attrs().Name
		}
		qs, err = dumpQdiscs()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("failed to read the qdiscs of netns %q: %w", ns, err)
	}
	lines := make([]string, 0, len(qs))
	for _, q := range qs {
		if name, ok := names[q.ifindex]; ok {
			lines = append(lines, q.line(name))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return devOf(lines[i]) < devOf(lines[j]) })
	return strings.Join(lines, "\n"), nil
}

// dumpQdiscs lists the qdiscs of the calling thread's netns. It reads the
// dump itself: netlink v1.3's QdiscList keeps the last statistics
// attribute, which is the legacy struct tc_stats without requeues.
func dumpQdiscs() ([]qdiscMsg, error) {
	var msgs [][]byte
	var err error
	for range 3 { // a dump that races a change says so; read it again
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL})
		if msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC); !errors.Is(err, nl.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list qdiscs: %w", err)
	}
	qs := make([]qdiscMsg, 0, len(msgs))
	for _, m := range msgs {
		q, err := parseQdiscMsg(m)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// qdiscMsg is one qdisc of an RTM_NEWQDISC dump.
type qdiscMsg struct {
	ifindex        int32
	parent, handle uint32
	kind           string
	packets, bytes uint64
	queue          netlink.GnetStatsQueue // qlen, backlog, drops, requeues, overlimits
}

// parseQdiscMsg reads one RTM_NEWQDISC message. Statistics come from
// TCA_STATS2 (TCA_STATS_BASIC, TCA_STATS_PKT64 when packets passed 2^32,
// TCA_STATS_QUEUE). The kernel appends the legacy struct tc_stats
// (TCA_STATS: no requeues, 32-bit packets) after the nest for old tools;
// it is read only when there is no TCA_STATS2.
func parseQdiscMsg(m []byte) (qdiscMsg, error) {
	if len(m) < nl.SizeofTcMsg {
		return qdiscMsg{}, fmt.Errorf("qdisc message of %d bytes, want at least %d", len(m), nl.SizeofTcMsg)
	}
	tc := nl.DeserializeTcMsg(m)
	q := qdiscMsg{ifindex: tc.Ifindex, parent: tc.Parent, handle: tc.Handle}
	attrs, err := nl.ParseRouteAttr(m[nl.SizeofTcMsg:])
	if err != nil {
		return q, fmt.Errorf("failed to parse qdisc attributes: %w", err)
	}
	var legacy []byte
	stats2 := false
	for _, at := range attrs {
		switch at.Attr.Type {
		case nl.TCA_KIND:
			q.kind = strings.TrimRight(string(at.Value), "\x00")
		case nl.TCA_STATS:
			legacy = at.Value
		case nl.TCA_STATS2:
			stats2 = true
			if err := q.stats2(at.Value); err != nil {
				return q, err
			}
		}
	}
	if !stats2 && legacy != nil {
		return q, q.tcStats(legacy)
	}
	return q, nil
}

// stats2 reads the nested attributes of TCA_STATS2.
func (q *qdiscMsg) stats2(b []byte) error {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return fmt.Errorf("failed to parse TCA_STATS2: %w", err)
	}
	ne := binary.NativeEndian
	var pkt64 bool
	for _, at := range attrs {
		v := at.Value
		switch at.Attr.Type {
		case nl.TCA_STATS_BASIC: // struct gnet_stats_basic: u64 bytes, u32 packets
			if len(v) < 12 {
				return fmt.Errorf("TCA_STATS_BASIC of %d bytes, want 12", len(v))
			}
			q.bytes = ne.Uint64(v)
			if !pkt64 {
				q.packets = uint64(ne.Uint32(v[8:]))
			}
		case nl.TCA_STATS_PKT64:
			if len(v) < 8 {
				return fmt.Errorf("TCA_STATS_PKT64 of %d bytes, want 8", len(v))
			}
			q.packets, pkt64 = ne.Uint64(v), true
		case nl.TCA_STATS_QUEUE: // struct gnet_stats_queue: qlen, backlog, drops, requeues, overlimits
			if len(v) < 20 {
				return fmt.Errorf("TCA_STATS_QUEUE of %d bytes, want 20", len(v))
			}
			q.queue = netlink.GnetStatsQueue{Qlen: ne.Uint32(v), Backlog: ne.Uint32(v[4:]), Drops: ne.Uint32(v[8:]),
				Requeues: ne.Uint32(v[12:]), Overlimits: ne.Uint32(v[16:])}
		}
	}
	return nil
}

// tcStats reads the legacy struct tc_stats: u64 bytes, then u32 packets,
// drops, overlimits, bps, pps, qlen, backlog.
func (q *qdiscMsg) tcStats(v []byte) error {
	if len(v) < 36 {
		return fmt.Errorf("TCA_STATS of %d bytes, want 36", len(v))
	}
	ne := binary.NativeEndian
	q.bytes, q.packets = ne.Uint64(v), uint64(ne.Uint32(v[8:]))
	q.queue = netlink.GnetStatsQueue{Drops: ne.Uint32(v[12:]), Overlimits: ne.Uint32(v[16:]),
		Qlen: ne.Uint32(v[28:]), Backlog: ne.Uint32(v[32:])}
	return nil
}

// line formats the qdisc as a line of a qdisc source.
func (q qdiscMsg) line(dev string) string {
	s := q.queue
	return fmt.Sprintf("%s %s %s %s packets %d bytes %d drops %d overlimits %d requeues %d backlog %d qlen %d",
		dev, tcHandle(q.parent), tcHandle(q.handle), q.kind,
		q.packets, q.bytes, s.Drops, s.Overlimits, s.Requeues, s.Backlog, s.Qlen)
}

func devOf(line string) string {
	dev, _, _ := strings.Cut(line, " ")
	return dev
}

// tcHandle writes a handle as tc does: root, ingress, 8001: or 8001:1.
func tcHandle(h uint32) string {
	switch h {
	case netlink.HANDLE_ROOT:
		return "root"
	case netlink.HANDLE_INGRESS:
		return "ingress"
	}
	major, minor := netlink.MajorMinor(h)
	if minor == 0 {
		return fmt.Sprintf("%x:", major)
	}
	return fmt.Sprintf("%x:%x", major, minor)
}
