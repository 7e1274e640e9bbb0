package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

func TestRingArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name             string
		prod, cons, size uint32
		entries, free    uint32
	}{
		{"empty", 5, 5, 8, 0, 8},
		{"full", 13, 5, 8, 8, 0},
		{"part", 7, 5, 8, 2, 6},
		{"producer wrapped", 2, math.MaxUint32 - 1, 8, 4, 4},
		{"both wrapped", 3, 1, 1024, 2, 1022},
		{"at the wrap", 0, math.MaxUint32, 4, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ringEntries(tc.prod, tc.cons); got != tc.entries {
				t.Errorf("entries(%d, %d) = %d, want %d", tc.prod, tc.cons, got, tc.entries)
			}
			if got := ringFree(tc.prod, tc.cons, tc.size); got != tc.free {
				t.Errorf("free(%d, %d, %d) = %d, want %d", tc.prod, tc.cons, tc.size, got, tc.free)
			}
		})
	}
}

// testRing lays a ring of size u64 entries over Go memory, with both
// indices starting at start, as the kernel's mapping would hold them.
func testRing(size, start uint32) *ring {
	mem := make([]byte, 64+8*int(size))
	r := newRing(mem, unix.XDPRingOffset{Producer: 0, Consumer: 8, Flags: 16, Desc: 64}, size)
	*r.producer, *r.consumer = start, start
	return r
}

// TestRingPassesAcrossTheWrap pushes numbered entries through a 4-entry
// ring whose indices wrap past 2^32, in batches the ring must cut short.
func TestRingPassesAcrossTheWrap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start uint32
		batch uint32
	}{
		{"no wrap", 0, 3},
		{"wraps", math.MaxUint32 - 5, 3},
		{"batch above size", math.MaxUint32 - 1, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRing(4, tc.start)
			var next, want uint64
			for round := 0; round < 20; round++ {
				i, n := r.reserve(tc.batch)
				if n > 4 || n == 0 {
					t.Fatalf("round %d: reserve gave %d of a 4-entry ring with room", round, n)
				}
				for k := range n {
					*r.addr(i + k) = next
					next++
				}
				r.submit(n)
				if _, more := r.reserve(1); n == 4 && more != 0 {
					t.Fatalf("round %d: room in a full ring", round)
				}
				c, m := r.ready(tc.batch)
				if m != n {
					t.Fatalf("round %d: ready %d, want %d", round, m, n)
				}
				for k := range m {
					if got := *r.addr(c + k); got != want {
						t.Fatalf("round %d: entry %d, want %d", round, got, want)
					}
					want++
				}
				r.release(m)
			}
			if want != next || next < 20 {
				t.Errorf("read %d of %d entries", want, next)
			}
		})
	}
}

func TestRingDescLayout(t *testing.T) {
	mem := make([]byte, 64+16*4)
	r := newRing(mem, unix.XDPRingOffset{Desc: 64}, 4)
	*r.desc(6) = unix.XDPDesc{Addr: 0x1122, Len: 60}
	// Entry 6 of 4 is slot 2: bytes 64+32.
	if got := binary.NativeEndian.Uint64(mem[96:]); got != 0x1122 {
		t.Errorf("slot 2 addr %#x, want 0x1122", got)
	}
	if got := binary.NativeEndian.Uint32(mem[104:]); got != 60 {
		t.Errorf("slot 2 len %d, want 60", got)
	}
	if unsafe.Sizeof(unix.XDPDesc{}) != 16 {
		t.Errorf("XDPDesc is %d bytes, the kernel's xdp_desc 16", unsafe.Sizeof(unix.XDPDesc{}))
	}
}

// Made by an independent implementation (Python's struct and a plain
// one's-complement sum): 10.77.0.2:40000 -> 10.77.0.1:7000, TTL 63, a
// 16-byte payload, and the answer the responder must make of it.
const (
	testRequest = "02000000000202000000000108004500002c123440003f1114f10a4d00020a4d00019c401b580018413b6e6170696c61622d7365712d30303031"
	testAnswer  = "02000000000102000000000208004500002c12344000401113f10a4d00010a4d00021b589c400018413b6e6170696c61622d7365712d30303031"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUDPReply(t *testing.T) {
	req := func(t *testing.T) []byte { return mustHex(t, testRequest) }
	for _, tc := range []struct {
		name  string
		frame func(t *testing.T) []byte
		want  string // hex of the answer, "" = refused
	}{
		{"request", req, testAnswer},
		{"padded to 60 bytes", func(t *testing.T) []byte { return append(req(t), make([]byte, 6)...) }, testAnswer},
		{"partial checksum from offload", func(t *testing.T) []byte {
			f := req(t)
			binary.BigEndian.PutUint16(f[40:], 0x1234) // only the pseudo-header sum, as a veth peer sends it
			return f
		}, testAnswer},
		{"arp", func(t *testing.T) []byte {
			f := req(t)
			f[12], f[13] = 0x08, 0x06
			return f
		}, ""},
		{"tcp", func(t *testing.T) []byte {
			f := req(t)
			f[23] = 6
			return f
		}, ""},
		{"ipv6 version", func(t *testing.T) []byte {
			f := req(t)
			f[14] = 0x65
			return f
		}, ""},
		{"truncated", func(t *testing.T) []byte { return req(t)[:50] }, ""},
		{"udp length disagrees", func(t *testing.T) []byte {
			f := req(t)
			binary.BigEndian.PutUint16(f[38:], 20)
			return f
		}, ""},
		{"short frame", func(t *testing.T) []byte { return req(t)[:30] }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.frame(t)
			n, err := udpReply(f)
			if tc.want == "" {
				if err == nil {
					t.Errorf("answered % x", f[:n])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(f[:n]); got != tc.want {
				t.Errorf("answer\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestUDPReplyChecksums checks the sums the way a receiver does (the whole
// header or pseudo-header plus datagram folds to 0xffff) for payload sizes
// odd and even, and that answering twice gives the request back but TTL.
func TestUDPReplyChecksums(t *testing.T) {
	for _, size := range []int{0, 1, 17, 64, 1472} {
		f := mustHex(t, testRequest)[:42]
		f = append(f, bytes.Repeat([]byte{0xa5}, size)...)
		binary.BigEndian.PutUint16(f[16:], uint16(28+size))
		binary.BigEndian.PutUint16(f[38:], uint16(8+size))
		orig := append([]byte(nil), f...)
		n, err := udpReply(f)
		if err != nil || n != len(f) {
			t.Fatalf("size %d: %d, %v", size, n, err)
		}
		if s := fold(sum(f[14:34], 0)); s != 0xffff {
			t.Errorf("size %d: ip header sums to %#x", size, s)
		}
		if s := fold(sum(f[34:], sum(f[26:34], 17+uint32(8+size)))); s != 0xffff {
			t.Errorf("size %d: udp sums to %#x", size, s)
		}
		udpReply(f)
		f[22] = orig[22] // TTL
		binary.BigEndian.PutUint16(f[24:], 0)
		binary.BigEndian.PutUint16(orig[24:], 0)
		binary.BigEndian.PutUint16(f[40:], 0)
		binary.BigEndian.PutUint16(orig[40:], 0)
		if !bytes.Equal(f, orig) {
			t.Errorf("size %d: answering the answer did not give the request back", size)
		}
	}
}

func TestXSKSpec(t *testing.T) {
	cpu := 1
	good := wire.Load{Port: 7000, XSK: &wire.XSK{Dev: "eth0", Mode: wire.XSKRR, PollCPU: &cpu}}
	for _, tc := range []struct {
		name string
		edit func(l *wire.Load)
		err  string
	}{
		{"defaults", func(l *wire.Load) {}, ""},
		{"no options", func(l *wire.Load) { l.XSK = nil }, "xsk load without xsk options"},
		{"no dev", func(l *wire.Load) { l.XSK.Dev = "" }, "xsk load without dev"},
		{"bad mode", func(l *wire.Load) { l.XSK.Mode = "echo" }, `bad mode "echo", want sink or rr`},
		{"bad receive", func(l *wire.Load) { l.XSK.Receive = "spin" }, `bad receive "spin", want blocking, poll or busy`},
		{"batch too big", func(l *wire.Load) { l.XSK.Batch = 4096 }, "bad batch 4096, want [1-1024]"},
		{"bad port", func(l *wire.Load) { l.Port = 0 }, "bad port 0, want [1-65535]"},
		{"bad xdp mode", func(l *wire.Load) { l.XSK.XDPMode = "offload" }, `bad xdp mode "offload", want native, generic or empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := good
			x := *good.XSK
			l.XSK = &x
			tc.edit(&l)
			got, err := xskSpec(l)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Batch != xskDefaultBatch || got.Receive != wire.XSKBlocking {
				t.Errorf("defaults: batch %d receive %q", got.Batch, got.Receive)
			}
		})
	}
}

func TestNetShort(t *testing.T) {
	// The program's 16-bit loads read packet bytes in the host's order:
	// port 7000 is bytes 1b 58.
	want := int32(0x1b58)
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		want = 0x581b
	}
	if got := netShort(7000); got != want {
		t.Errorf("netShort(7000) = %#x, want %#x", got, want)
	}
}
