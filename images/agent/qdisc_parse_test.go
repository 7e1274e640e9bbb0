package agent

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// qdiscDumpMsg builds an RTM_NEWQDISC message as tc_fill_qdisc lays it
// out: the tcmsg, TCA_KIND, then the statistics attributes in attrs.
func qdiscDumpMsg(kind string, attrs ...*nl.RtAttr) []byte {
	b := (&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: 7, Parent: netlink.HANDLE_ROOT, Handle: 0x80010000}).Serialize()
	b = append(b, nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(kind)).Serialize()...)
	for _, a := range attrs {
		b = append(b, a.Serialize()...)
	}
	return b
}

func u32s(v ...uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, x)
	}
	return b
}

// stats2 is TCA_STATS2 with struct gnet_stats_basic (padded to 16 bytes
// as the kernel sends it), an optional TCA_STATS_PKT64 and struct
// gnet_stats_queue {qlen, backlog, drops, requeues, overlimits}.
func stats2(bytes uint64, packets uint32, pkt64 uint64, queue ...uint32) *nl.RtAttr {
	a := nl.NewRtAttr(nl.TCA_STATS2, nil)
	basic := binary.NativeEndian.AppendUint64(nil, bytes)
	basic = append(basic, u32s(packets, 0)...)
	a.AddRtAttr(nl.TCA_STATS_BASIC, basic)
	if pkt64 != 0 {
		a.AddRtAttr(nl.TCA_STATS_PKT64, binary.NativeEndian.AppendUint64(nil, pkt64))
	}
	a.AddRtAttr(nl.TCA_STATS_QUEUE, u32s(queue...))
	return a
}

// legacy is struct tc_stats {u64 bytes; u32 packets, drops, overlimits,
// bps, pps, qlen, backlog}: no requeues.
func legacy(bytes uint64, packets, drops, overlimits, qlen, backlog uint32) *nl.RtAttr {
	b := binary.NativeEndian.AppendUint64(nil, bytes)
	b = append(b, u32s(packets, drops, overlimits, 0, 0, qlen, backlog)...)
	return nl.NewRtAttr(nl.TCA_STATS, append(b, 0, 0, 0, 0)) // the struct's tail padding
}

func TestParseQdiscMsg(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		// The order the kernel sends: TCA_STATS2, then the legacy TCA_STATS
		// (gnet_stats_finish_copy). netlink v1.3's QdiscList let the legacy
		// struct win and read requeues as 0.
		{"stats2 then legacy keeps requeues",
			qdiscDumpMsg("pfifo", stats2(10600, 100, 0, 3, 318, 40, 17, 0), legacy(10600, 100, 40, 0, 3, 318)),
			"vtx root 8001: pfifo packets 100 bytes 10600 drops 40 overlimits 0 requeues 17 backlog 318 qlen 3"},
		{"64-bit packets",
			qdiscDumpMsg("mq", stats2(1<<40, 5, 1<<32+5, 0, 0, 0, 2, 0), legacy(1<<40, 5, 0, 0, 0, 0)),
			"vtx root 8001: mq packets 4294967301 bytes 1099511627776 drops 0 overlimits 0 requeues 2 backlog 0 qlen 0"},
		{"legacy only",
			qdiscDumpMsg("pfifo_fast", legacy(600, 6, 1, 2, 3, 4)),
			"vtx root 8001: pfifo_fast packets 6 bytes 600 drops 1 overlimits 2 requeues 0 backlog 4 qlen 3"},
		{"no statistics", qdiscDumpMsg("noqueue"),
			"vtx root 8001: noqueue packets 0 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parseQdiscMsg(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.line("vtx"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseQdiscMsgErrors(t *testing.T) {
	short := nl.NewRtAttr(nl.TCA_STATS2, nil)
	short.AddRtAttr(nl.TCA_STATS_QUEUE, u32s(1, 2, 3))
	for _, tc := range []struct {
		name, want string
		msg        []byte
	}{
		{"short message", "qdisc message of 3 bytes", []byte{1, 2, 3}},
		{"short queue stats", "TCA_STATS_QUEUE of 12 bytes, want 20", qdiscDumpMsg("pfifo", short)},
		{"short legacy stats", "TCA_STATS of 8 bytes, want 36", qdiscDumpMsg("pfifo", nl.NewRtAttr(nl.TCA_STATS, make([]byte, 8)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseQdiscMsg(tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestQdiscDumpOrder checks, on the host's kernel, the layout the parser
// relies on: each qdisc carries TCA_STATS2 and after it the legacy
// TCA_STATS, so whichever comes last must not decide the statistics.
func TestQdiscDumpOrder(t *testing.T) {
	a := testAgent(t)
	if err := a.qdisc(wire.Qdisc{Dev: "va", Netns: "t", Op: "replace", Kind: "pfifo"}); err != nil {
		t.Fatal(err)
	}
	err := a.ns.in("t", func() error {
		req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL})
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			attrs, err := nl.ParseRouteAttr(m[nl.SizeofTcMsg:])
			if err != nil {
				return err
			}
			var order []uint16
			for _, at := range attrs {
				if at.Attr.Type == nl.TCA_STATS || at.Attr.Type == nl.TCA_STATS2 {
					order = append(order, at.Attr.Type)
				}
			}
			if len(order) != 2 || order[0] != nl.TCA_STATS2 || order[1] != nl.TCA_STATS {
				t.Errorf("statistics attributes %v, want [TCA_STATS2=%d TCA_STATS=%d]", order, nl.TCA_STATS2, nl.TCA_STATS)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
