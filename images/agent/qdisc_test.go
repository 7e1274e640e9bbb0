package agent

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
	"napilab/results/metrics"
)

// rootQdisc returns the kind and the limit (pfifo, fq_codel; else 0) of
// dev's root qdisc in netns t, read back from the kernel.
func rootQdisc(t *testing.T, a *agent, dev string) (kind string, limit uint32) {
	t.Helper()
	err := a.ns.in("t", func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		qs, err := netlink.QdiscList(l)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Attrs().Parent != netlink.HANDLE_ROOT {
				continue
			}
			kind = q.Type()
			if fq, ok := q.(*netlink.FqCodel); ok {
				limit = fq.Limit
			}
		}
		if kind == "pfifo" {
			limit, err = pfifoLimit(l.Attrs().Index)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return kind, limit
}

// pfifoLimit reads struct tc_fifo_qopt of the root qdisc, which netlink
// v1.3 does not parse.
func pfifoLimit(index int) (uint32, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(index)})
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		tc := nl.DeserializeTcMsg(m)
		if int(tc.Ifindex) != index || tc.Parent != netlink.HANDLE_ROOT {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[tc.Len():])
		if err != nil {
			return 0, err
		}
		for _, at := range attrs {
			if at.Attr.Type == nl.TCA_OPTIONS && len(at.Value) >= 4 {
				return binary.NativeEndian.Uint32(at.Value), nil
			}
		}
	}
	return 0, nil
}

// addVeth adds a veth pair with txq TX queues to netns t, both ends up.
func addVeth(t *testing.T, a *agent, name string, txq int) {
	t.Helper()
	h, err := a.ns.handle("t")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, NumTxQueues: txq, NumRxQueues: txq}, PeerName: name + "p"}
	if err := h.LinkAdd(v); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{name, name + "p"} {
		if err := a.ns.linkUpDown("t", n, true); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQdisc sets, changes and deletes root qdiscs on veths in a private
// netns, as the agent does in the guest, and reads each result back.
func TestQdisc(t *testing.T) {
	a := testAgent(t)
	addVeth(t, a, "one", 1)
	addVeth(t, a, "two", 2)
	for _, step := range []struct {
		name      string
		q         wire.Qdisc
		wantKind  string
		wantLimit uint32
		wantErr   string
	}{
		{"pfifo with a limit", wire.Qdisc{Dev: "va", Op: "replace", Kind: "pfifo", Limit: 7}, "pfifo", 7, ""},
		{"same kind changes the limit", wire.Qdisc{Dev: "va", Op: "replace", Kind: "pfifo", Limit: 9}, "pfifo", 9, ""},
		{"same kind without a limit keeps it", wire.Qdisc{Dev: "va", Op: "replace", Kind: "pfifo"}, "pfifo", 9, ""},
		{"add over the same kind", wire.Qdisc{Dev: "va", Op: "add", Kind: "pfifo"}, "pfifo", 9, "failed to add the root qdisc of va with pfifo: file exists"},
		{"another kind swaps it", wire.Qdisc{Dev: "va", Op: "replace", Kind: "pfifo_fast"}, "pfifo_fast", 0, ""},
		{"delete", wire.Qdisc{Dev: "va", Op: "delete"}, "noqueue", 0, ""},
		{"delete the default", wire.Qdisc{Dev: "va", Op: "delete"}, "noqueue", 0, "failed to delete the root qdisc of va: no such file or directory"},
		{"add", wire.Qdisc{Dev: "va", Op: "add", Kind: "pfifo_fast"}, "pfifo_fast", 0, ""},
		{"noqueue", wire.Qdisc{Dev: "va", Op: "replace", Kind: "noqueue"}, "noqueue", 0, ""},
		{"mq", wire.Qdisc{Dev: "two", Op: "replace", Kind: "mq"}, "mq", 0, ""},
		{"mq on one queue", wire.Qdisc{Dev: "one", Op: "replace", Kind: "mq"}, "noqueue", 0, "mq needs a device with several TX queues"},
		{"unknown kind", wire.Qdisc{Dev: "va", Op: "replace", Kind: "sfq"}, "noqueue", 0, "want pfifo, pfifo_fast, fq_codel, mq, noqueue"},
		{"unknown op", wire.Qdisc{Dev: "va", Op: "change", Kind: "pfifo"}, "noqueue", 0, "want add, replace or delete"},
		{"limit without one", wire.Qdisc{Dev: "va", Op: "replace", Kind: "pfifo_fast", Limit: 5}, "noqueue", 0, "takes no limit"},
		{"missing device", wire.Qdisc{Dev: "nosuch", Op: "replace", Kind: "pfifo"}, "", 0, "failed to find device: Link not found"},
	} {
		step.q.Netns = "t"
		err := a.qdisc(step.q)
		switch {
		case step.wantErr == "" && err != nil:
			t.Fatalf("%s: %v", step.name, err)
		case step.wantErr != "" && (err == nil || !strings.Contains(err.Error(), step.wantErr)):
			t.Fatalf("%s: error %v, want %q", step.name, err, step.wantErr)
		}
		if step.wantKind == "" {
			continue
		}
		if kind, limit := rootQdisc(t, a, step.q.Dev); kind != step.wantKind || limit != step.wantLimit {
			t.Fatalf("%s: root qdisc %s limit %d, want %s limit %d", step.name, kind, limit, step.wantKind, step.wantLimit)
		}
	}
}

// TestQdiscFqCodel sets fq_codel's limit, where the host kernel has fq_codel.
func TestQdiscFqCodel(t *testing.T) {
	a := testAgent(t)
	for _, limit := range []uint32{100, 50} {
		err := a.qdisc(wire.Qdisc{Dev: "va", Netns: "t", Op: "replace", Kind: "fq_codel", Limit: limit})
		if errors.Is(err, unix.ENOENT) {
			t.Skipf("no fq_codel in this host's kernel: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if kind, got := rootQdisc(t, a, "va"); kind != "fq_codel" || got != limit {
			t.Fatalf("root qdisc %s limit %d, want fq_codel limit %d", kind, got, limit)
		}
	}
}

// TestQdiscStats counts frames sent through a pfifo root qdisc and reads
// them back the way a metric does: source text, metrics.ParseSource, field.
func TestQdiscStats(t *testing.T) {
	a := testAgent(t)
	if err := a.qdisc(wire.Qdisc{Dev: "va", Netns: "t", Op: "replace", Kind: "pfifo", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	read := func() metrics.Series {
		t.Helper()
		text, err := a.read(wire.PrefixQdisc + "t")
		if err != nil {
			t.Fatal(err)
		}
		s, err := metrics.ParseSource(wire.PrefixQdisc+"t", text)
		if err != nil {
			t.Fatalf("%v in:\n%s", err, text)
		}
		return s
	}
	before := read()
	const frames = 5
	sendFrames(t, a, "va", frames)
	after := read()
	got := after["va.packets"][0] - before["va.packets"][0]
	if got < frames || after["va.drops"][0] != 0 {
		t.Errorf("pfifo on va: %v packets after %d frames, %v drops", got, frames, after["va.drops"])
	}
	if _, ok := after["vb.requeues"]; !ok {
		t.Errorf("vb's root noqueue missing: %v", after)
	}
	if _, err := a.read(wire.PrefixQdisc + "nosuch"); err == nil {
		t.Error("qdisc:nosuch read without error")
	}
}

// sendFrames writes n Ethernet frames to dev in netns t with a packet
// socket, so each goes through the root qdisc.
func sendFrames(t *testing.T, a *agent, dev string, n int) {
	t.Helper()
	const proto = 0x88b5 // IEEE local experimental
	err := a.ns.in("t", func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		frame := make([]byte, 60)
		copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, proto >> 8, proto & 0xff})
		to := &unix.SockaddrLinklayer{Ifindex: l.Attrs().Index, Protocol: htons(proto)}
		for range n {
			if err := unix.Sendto(fd, frame, 0, to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
