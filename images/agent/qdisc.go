package main

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"napilab/images/wire"
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
	h, err := a.ns.handle(ns)
	if err != nil {
		return "", fmt.Errorf("failed to open netlink in netns %q: %w", ns, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return "", fmt.Errorf("failed to list devices: %w", err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	var qs []netlink.Qdisc
	for range 3 { // a dump that races a change says so; read it again
		if qs, err = h.QdiscList(nil); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("failed to list qdiscs: %w", err)
	}
	lines := make([]string, 0, len(qs))
	for _, q := range qs {
		if name, ok := names[q.Attrs().LinkIndex]; ok {
			lines = append(lines, qdiscLine(name, q))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return devOf(lines[i]) < devOf(lines[j]) })
	return strings.Join(lines, "\n"), nil
}

// qdiscLine formats one qdisc as a line of a qdisc source.
func qdiscLine(dev string, q netlink.Qdisc) string {
	at := q.Attrs()
	var b netlink.GnetStatsBasic
	var s netlink.GnetStatsQueue
	if st := at.Statistics; st != nil {
		if st.Basic != nil {
			b = *st.Basic
		}
		if st.Queue != nil {
			s = *st.Queue
		}
	}
	return fmt.Sprintf("%s %s %s %s packets %d bytes %d drops %d overlimits %d requeues %d backlog %d qlen %d",
		dev, tcHandle(at.Parent), tcHandle(at.Handle), q.Type(),
		b.Packets, b.Bytes, s.Drops, s.Overlimits, s.Requeues, s.Backlog, s.Qlen)
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
