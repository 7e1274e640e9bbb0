package agent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// nla writes one netlink attribute: length, type, data, padding to 4.
func nla(typ uint16, data []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func ptr[T any](v T) *T { return &v }

func TestEncodeNAPISet(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  wire.NAPI
		want []byte
	}{
		{"busy-poll", wire.NAPI{Threaded: "busy-poll"},
			cat(nla(2, u32(8193)), nla(8, u32(2)))},
		{"disabled is 0, not left out", wire.NAPI{Threaded: "disabled"},
			cat(nla(2, u32(8193)), nla(8, u32(0)))},
		{"enabled", wire.NAPI{Threaded: "enabled"},
			cat(nla(2, u32(8193)), nla(8, u32(1)))},
		{"every setting", wire.NAPI{Threaded: "enabled", DeferHardIRQs: ptr[uint32](2),
			GROFlushTimeout: ptr[uint64](200_000), IRQSuspendTimeout: ptr[uint64](20_000_000)},
			cat(nla(2, u32(8193)), nla(8, u32(1)), nla(5, u32(2)), nla(6, u64(200_000)), nla(7, u64(20_000_000)))},
		{"a zero timeout is sent", wire.NAPI{GROFlushTimeout: ptr[uint64](0)},
			cat(nla(2, u32(8193)), nla(6, u64(0)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeNAPISet(8193, tc.set)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got  % x\nwant % x", got, tc.want)
			}
		})
	}
	if _, err := encodeNAPISet(1, wire.NAPI{Threaded: "on"}); err == nil || !strings.Contains(err.Error(), "disabled, enabled, busy-poll") {
		t.Errorf("threaded on: %v, want the modes listed", err)
	}
}

func TestEncodeFilters(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  func() ([]byte, error)
		want []byte
	}{
		{"napi-get by device", func() ([]byte, error) { return encodeIfindex(napiAttrIfindex, 3) }, nla(1, u32(3))},
		{"queue-get by device", func() ([]byte, error) { return encodeIfindex(queueAttrIfindex, 3) }, nla(2, u32(3))},
		{"get family netdev", func() ([]byte, error) { return encodeGetFamily("netdev") }, nla(unix.CTRL_ATTR_FAMILY_NAME, []byte("netdev\x00"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("got % x (%v), want % x", got, err, tc.want)
			}
		})
	}
}

func TestDecodeNAPI(t *testing.T) {
	for _, tc := range []struct {
		name, line string // line as dev eth0, name rx-0
		b          []byte
		err        string
	}{
		{"7.x threaded busy-poll with a kthread",
			"eth0 rx-0 id 8193 ifindex 2 irq 27 pid 311 threaded 2 defer_hard_irqs 2 gro_flush_timeout 200000 irq_suspend_timeout 20000000",
			cat(nla(1, u32(2)), nla(2, u32(8193)), nla(3, u32(27)), nla(4, u32(311)), nla(5, u32(2)),
				nla(6, u32(200_000)), nla(7, u64(20_000_000)), nla(8, u32(2))), ""},
		{"6.12: no threaded, no irq-suspend-timeout, no kthread",
			"eth0 rx-0 id 8194 ifindex 2 irq 28 defer_hard_irqs 0 gro_flush_timeout 0",
			cat(nla(1, u32(2)), nla(2, u32(8194)), nla(3, u32(28)), nla(5, u32(0)), nla(6, u32(0))), ""},
		{"an attribute newer than the lab is skipped", "eth0 rx-0 id 9",
			cat(nla(2, u32(9)), nla(42, u64(1))), ""},
		{"a 64-bit timeout", "eth0 rx-0 id 9 gro_flush_timeout 5000000000",
			cat(nla(2, u32(9)), nla(6, u64(5_000_000_000))), ""},
		{"a uint of 2 bytes", "", cat(nla(2, u32(9)), nla(6, u16(1))), "uint attribute of 2 bytes"},
		{"no id", "", nla(1, u32(2)), "without an id"},
		{"a short u32", "", nla(2, u16(9)), "napi-get answer"},
		{"cut inside an attribute", "", nla(2, u32(9))[:6], "napi-get answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := decodeNAPI(tc.b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := n.line("eth0", "rx-0"); got != tc.line {
				t.Errorf("line %q\nwant %q", got, tc.line)
			}
		})
	}
}

func TestDecodeQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want queueInfo
	}{
		{"rx queue 1 with its NAPI", cat(nla(1, u32(1)), nla(2, u32(2)), nla(3, u32(0)), nla(4, u32(8194))),
			queueInfo{id: 1, ifindex: 2, typ: queueTypeRX, napiID: 8194}},
		{"tx queue without NAPI", cat(nla(1, u32(0)), nla(2, u32(2)), nla(3, u32(1))),
			queueInfo{id: 0, ifindex: 2, typ: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeQueue(tc.b)
			if err != nil || got != tc.want {
				t.Errorf("got %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
}

// op is one CTRL_ATTR_OPS entry: a nest numbered i with the command's id and flags.
func op(i uint16, id uint32) []byte {
	return nla(i|unix.NLA_F_NESTED, cat(nla(unix.CTRL_ATTR_OP_ID, u32(id)), nla(unix.CTRL_ATTR_OP_FLAGS, u32(0x0e))))
}

func TestDecodeFamily(t *testing.T) {
	name := nla(unix.CTRL_ATTR_FAMILY_NAME, []byte("netdev\x00"))
	for _, tc := range []struct {
		name string
		b    []byte
		id   uint16
		ops  []uint32
		err  string
	}{
		{"7.x with napi-set", cat(nla(unix.CTRL_ATTR_FAMILY_ID, u16(29)), name,
			nla(unix.CTRL_ATTR_OPS|unix.NLA_F_NESTED, cat(op(1, 1), op(2, 10), op(3, 11), op(4, 14)))),
			29, []uint32{1, 10, 11, 14}, ""},
		{"6.12 without napi-set", cat(nla(unix.CTRL_ATTR_FAMILY_ID, u16(30)), name,
			nla(unix.CTRL_ATTR_OPS|unix.NLA_F_NESTED, cat(op(1, 10), op(2, 11)))),
			30, []uint32{10, 11}, ""},
		{"no ops at all", cat(nla(unix.CTRL_ATTR_FAMILY_ID, u16(31)), name), 31, nil, ""},
		{"no id", name, 0, nil, "no family id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := decodeFamily(tc.b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ops []uint32
			for o := range f.ops {
				ops = append(ops, o)
			}
			slices.Sort(ops)
			if f.id != tc.id || !slices.Equal(ops, tc.ops) {
				t.Errorf("family id %d ops %v, want %d %v", f.id, ops, tc.id, tc.ops)
			}
		})
	}
}

// napisOf makes NAPIs with these ids.
func napisOf(ids ...uint32) []napiInfo {
	out := make([]napiInfo, len(ids))
	for i, id := range ids {
		out[i].set(napiAttrID, uint64(id))
	}
	return out
}

func TestSelectNAPIs(t *testing.T) {
	// virtio-net links each RX queue to its NAPI; TX queues have none.
	linked := []queueInfo{{id: 1, napiID: 8194}, {id: 0, napiID: 8195}, {id: 0, typ: 1}, {id: 1, typ: 1}}
	for _, tc := range []struct {
		name   string
		napis  []napiInfo
		queues []queueInfo
		queue  *int
		want   []uint32
		err    string
	}{
		{"every NAPI, by id", napisOf(8195, 8194), linked, nil, []uint32{8194, 8195}, ""},
		{"the NAPI queue-get links to rx-0", napisOf(8194, 8195), linked, ptr(0), []uint32{8195}, ""},
		{"rx-1", napisOf(8194, 8195), linked, ptr(1), []uint32{8194}, ""},
		{"no queue links: the order of ids", napisOf(8197, 8196), nil, ptr(1), []uint32{8197}, ""},
		{"no such queue", napisOf(8194, 8195), linked, ptr(2), nil, "eth0 has no NAPI serving rx queue 2 (its NAPIs: rx-1, rx-0)"},
		{"no NAPI", nil, nil, nil, nil, "eth0 has no NAPI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectNAPIs("eth0", tc.napis, tc.queues, tc.queue)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}

func TestNAPINames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		napis  []napiInfo
		queues []queueInfo
		want   map[uint32]string
	}{
		{"one NAPI for two queues takes the lowest", napisOf(10, 11),
			[]queueInfo{{id: 1, napiID: 10}, {id: 0, napiID: 10}, {id: 2, napiID: 11}},
			map[uint32]string{10: "rx-0", 11: "rx-2"}},
		{"a NAPI no queue names keeps its id", napisOf(10, 11), []queueInfo{{id: 0, napiID: 11}},
			map[uint32]string{10: "10", 11: "rx-0"}},
		{"no links", napisOf(12, 10), []queueInfo{{id: 0}}, map[uint32]string{10: "rx-0", 12: "rx-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := napiNames(tc.napis, tc.queues)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNAPISetHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		set  wire.NAPI
		want string
	}{
		{"busy-poll out of range", fmt.Errorf("x: %w", unix.ERANGE), wire.NAPI{Threaded: "busy-poll"}, "needs 6.19"},
		{"threaded unknown", fmt.Errorf("%w, Unknown attribute type", unix.EINVAL), wire.NAPI{Threaded: "enabled"}, "from 6.17 on"},
		{"another refusal", unix.EBUSY, wire.NAPI{Threaded: "busy-poll"}, ""},
		{"range without busy-poll", unix.ERANGE, wire.NAPI{DeferHardIRQs: ptr[uint32](1 << 31)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := napiSetHint(tc.err, tc.set)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("hint %q, want %q", got, tc.want)
			}
		})
	}
}
