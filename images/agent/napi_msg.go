package agent

// The netdev generic netlink family's messages for NAPIs and queues, as
// include/uapi/linux/netdev.h numbers them (checked against the 7.x header
// and Documentation/netlink/specs/netdev.yaml: the NAPI attributes 1-8, the
// commands, enum netdev_napi_threaded disabled 0, enabled 1, busy-poll 2).

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// netdev commands.
const (
	netdevCmdQueueGet = 10
	netdevCmdNAPIGet  = 11
	netdevCmdNAPISet  = 14 // newer than 6.12
)

// NAPI attributes (NETDEV_A_NAPI_*).
const (
	napiAttrIfindex           = 1
	napiAttrID                = 2
	napiAttrIRQ               = 3
	napiAttrPID               = 4
	napiAttrDeferHardIRQs     = 5
	napiAttrGROFlushTimeout   = 6 // uint: 4 or 8 bytes
	napiAttrIRQSuspendTimeout = 7 // uint: 4 or 8 bytes
	napiAttrThreaded          = 8
	napiAttrMax               = 8
)

// Queue attributes (NETDEV_A_QUEUE_*) and the RX queue type.
const (
	queueAttrID      = 1
	queueAttrIfindex = 2
	queueAttrType    = 3
	queueAttrNAPIID  = 4
	queueTypeRX      = 0
)

// napiThreaded returns the enum value of a threaded mode name.
func napiThreaded(mode string) (uint32, error) {
	for i, m := range wire.NAPIThreadedModes {
		if m == mode {
			return uint32(i), nil
		}
	}
	return 0, fmt.Errorf("bad threaded mode %q, want %s", mode, strings.Join(wire.NAPIThreadedModes, ", "))
}

// napiFields names the attributes of a napi source line, in line order.
var napiFields = []struct {
	attr uint16
	name string
}{
	{napiAttrID, "id"}, {napiAttrIfindex, "ifindex"}, {napiAttrIRQ, "irq"}, {napiAttrPID, "pid"},
	{napiAttrThreaded, "threaded"}, {napiAttrDeferHardIRQs, "defer_hard_irqs"},
	{napiAttrGROFlushTimeout, "gro_flush_timeout"}, {napiAttrIRQSuspendTimeout, "irq_suspend_timeout"},
}

// napiInfo is one NAPI of a napi-get answer: the attributes the kernel sent.
type napiInfo struct {
	val [napiAttrMax + 1]uint64
	has [napiAttrMax + 1]bool
}

func (n napiInfo) id() uint32 { return uint32(n.val[napiAttrID]) }

func (n *napiInfo) set(attr uint16, v uint64) { n.val[attr], n.has[attr] = v, true }

// line writes the NAPI as a napi source line (wire.SourceNAPI).
func (n napiInfo) line(dev, name string) string {
	var b strings.Builder
	b.WriteString(dev + " " + name)
	for _, f := range napiFields {
		if n.has[f.attr] {
			fmt.Fprintf(&b, " %s %d", f.name, n.val[f.attr])
		}
	}
	return b.String()
}

// decodeNAPI reads the attributes of one napi-get answer; attributes newer
// than napiAttrMax are skipped.
func decodeNAPI(b []byte) (napiInfo, error) {
	var n napiInfo
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return n, fmt.Errorf("failed to parse a napi-get answer: %w", err)
	}
	for ad.Next() {
		switch t := ad.Type(); t {
		case napiAttrGROFlushTimeout, napiAttrIRQSuspendTimeout:
			ad.Do(func(b []byte) error {
				v, err := uintAttr(b)
				n.set(t, v)
				return err
			})
		case napiAttrIfindex, napiAttrID, napiAttrIRQ, napiAttrPID, napiAttrDeferHardIRQs, napiAttrThreaded:
			n.set(t, uint64(ad.Uint32()))
		}
	}
	if err := ad.Err(); err != nil {
		return n, fmt.Errorf("failed to parse a napi-get answer: %w", err)
	}
	if !n.has[napiAttrID] {
		return n, fmt.Errorf("a napi-get answer without an id")
	}
	return n, nil
}

// uintAttr reads a netlink uint (NLA_UINT): 4 or 8 bytes, native order.
func uintAttr(b []byte) (uint64, error) {
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case 8:
		return binary.NativeEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("uint attribute of %d bytes, want 4 or 8", len(b))
}

// encodeIfindex is a dump request's filter on a device: attr is
// napiAttrIfindex for napi-get, queueAttrIfindex for queue-get.
func encodeIfindex(attr uint16, ifindex uint32) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attr, ifindex)
	return ae.Encode()
}

// encodeNAPISet encodes napi-set for one NAPI: its id and the settings n
// gives (the timeouts as 8-byte uints).
func encodeNAPISet(id uint32, n wire.NAPI) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(napiAttrID, id)
	if n.Threaded != "" {
		mode, err := napiThreaded(n.Threaded)
		if err != nil {
			return nil, err
		}
		ae.Uint32(napiAttrThreaded, mode)
	}
	if n.DeferHardIRQs != nil {
		ae.Uint32(napiAttrDeferHardIRQs, *n.DeferHardIRQs)
	}
	if n.GROFlushTimeout != nil {
		ae.Uint64(napiAttrGROFlushTimeout, *n.GROFlushTimeout)
	}
	if n.IRQSuspendTimeout != nil {
		ae.Uint64(napiAttrIRQSuspendTimeout, *n.IRQSuspendTimeout)
	}
	return ae.Encode()
}

// queueInfo is one queue of a queue-get answer.
type queueInfo struct {
	id, typ, ifindex uint32
	napiID           uint32 // 0: the driver linked no NAPI to the queue
}

// decodeQueue reads the attributes of one queue-get answer.
func decodeQueue(b []byte) (queueInfo, error) {
	var q queueInfo
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return q, fmt.Errorf("failed to parse a queue-get answer: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case queueAttrID:
			q.id = ad.Uint32()
		case queueAttrType:
			q.typ = ad.Uint32()
		case queueAttrIfindex:
			q.ifindex = ad.Uint32()
		case queueAttrNAPIID:
			q.napiID = ad.Uint32()
		}
	}
	if err := ad.Err(); err != nil {
		return q, fmt.Errorf("failed to parse a queue-get answer: %w", err)
	}
	return q, nil
}

// napiNames names each NAPI of a device: rx-<queue> for the lowest RX queue
// queue-get links to it; when no queue has a NAPI (old kernels, drivers
// that do not link them), rx-<i> for the i-th NAPI in id order. A NAPI no
// queue names keeps its id.
func napiNames(napis []napiInfo, queues []queueInfo) map[uint32]string {
	names := map[uint32]string{}
	linked := false
	sort.Slice(queues, func(i, j int) bool { return queues[i].id < queues[j].id })
	for _, q := range queues {
		if q.typ != queueTypeRX || q.napiID == 0 {
			continue
		}
		linked = true
		if _, ok := names[q.napiID]; !ok {
			names[q.napiID] = "rx-" + strconv.Itoa(int(q.id))
		}
	}
	ids := napiIDs(napis)
	for i, id := range ids {
		if _, ok := names[id]; !ok {
			names[id] = strconv.Itoa(int(id))
			if !linked {
				names[id] = "rx-" + strconv.Itoa(i)
			}
		}
	}
	return names
}

// napiIDs lists the NAPIs' ids in ascending order.
func napiIDs(napis []napiInfo) []uint32 {
	ids := make([]uint32, len(napis))
	for i, n := range napis {
		ids[i] = n.id()
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// selectNAPIs picks the NAPIs a napi step changes: every one of the device,
// or the one napiNames calls rx-<queue>.
func selectNAPIs(dev string, napis []napiInfo, queues []queueInfo, queue *int) ([]uint32, error) {
	if len(napis) == 0 {
		return nil, fmt.Errorf("%s has no NAPI (napi-get listed none: down, or a veth without GRO or XDP?)", dev)
	}
	if queue == nil {
		return napiIDs(napis), nil
	}
	want := "rx-" + strconv.Itoa(*queue)
	names := napiNames(napis, queues)
	for _, id := range napiIDs(napis) {
		if names[id] == want {
			return []uint32{id}, nil
		}
	}
	var have []string
	for _, id := range napiIDs(napis) {
		have = append(have, names[id])
	}
	return nil, fmt.Errorf("%s has no NAPI serving rx queue %d (its NAPIs: %s)", dev, *queue, strings.Join(have, ", "))
}

// genlFamily is a generic netlink family as the controller describes it.
type genlFamily struct {
	id  uint16
	ops map[uint32]bool // the commands the kernel has
}

// encodeGetFamily asks the controller for one family by name.
func encodeGetFamily(name string) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, name)
	return ae.Encode()
}

// decodeFamily reads the controller's answer: the family id and its
// commands (CTRL_ATTR_OPS, a list of nests holding CTRL_ATTR_OP_ID).
func decodeFamily(b []byte) (genlFamily, error) {
	f := genlFamily{ops: map[uint32]bool{}}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return f, fmt.Errorf("failed to parse the family: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.CTRL_ATTR_FAMILY_ID:
			f.id = ad.Uint16()
		case unix.CTRL_ATTR_OPS:
			ad.Nested(func(list *netlink.AttributeDecoder) error {
				for list.Next() {
					list.Nested(func(op *netlink.AttributeDecoder) error {
						for op.Next() {
							if op.Type() == unix.CTRL_ATTR_OP_ID {
								f.ops[op.Uint32()] = true
							}
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return f, fmt.Errorf("failed to parse the family: %w", err)
	}
	if f.id == 0 {
		return f, fmt.Errorf("the controller's answer has no family id")
	}
	return f, nil
}
