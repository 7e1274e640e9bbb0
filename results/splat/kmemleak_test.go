package splat

import (
	"os"
	"testing"

	"napilab/results"
)

func TestParseKmemleak(t *testing.T) {
	// 6.1 prints addresses in brackets, 6.12 adds the backtrace's crc.
	text := `unreferenced object 0xffff888006a0c000 (size 1024):
  comm "softirq", pid 0, jiffies 4294893000
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<ffffffff8148a2b6>] kmalloc_trace+0x26/0x60
    [<ffffffff8212c3a1>] __alloc_skb+0xd1/0x2a0
    [<ffffffff82a1be20>] veth_xmit.cold+0x10/0x40
    [<ffffffff8213f0d2>] dev_hard_start_xmit+0x112/0x3d0
unreferenced object 0xffff888006a0d000 (size 64):
  comm "init", pid 1, jiffies 4294895000
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 8f2a7c47):
    __kmalloc_cache_noprof+0x2c3/0x380
    netif_napi_add_weight+0x40/0x120
`
	got := ParseKmemleak([]byte(text))
	want := []struct {
		title   string
		jiffies uint64
	}{{"memory leak in veth_xmit", 4294893000}, {"memory leak in netif_napi_add_weight", 4294895000}}
	if len(got) != len(want) {
		t.Fatalf("got %d leaks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Title != w.title || got[i].Jiffies != w.jiffies || got[i].Type != results.CrashMemoryLeak || got[i].Report == "" {
			t.Errorf("leak %d = %q jiffies %d type %s, want %q jiffies %d", i, got[i].Title, got[i].Jiffies, got[i].Type, w.title, w.jiffies)
		}
	}
	if n := len(ParseKmemleak(nil)); n != 0 {
		t.Errorf("empty report: %d leaks", n)
	}
	g := Group([]results.Splat{got[0].Splat, got[1].Splat, got[0].Splat})
	if len(g) != 2 || g[0].Count != 2 || g[1].Count != 1 {
		t.Errorf("grouped: %+v", g)
	}
}

// TestKmemleakCapture reads a real report: regress-xps-map-leak-6.1's debug
// flavour after napi-disable-race (kernels/regress-xps-map-leak-6.1.yaml).
func TestKmemleakCapture(t *testing.T) {
	data, err := os.ReadFile("testdata/kmemleak/xps-map-leak-6.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	leaks := ParseKmemleak(data)
	if len(leaks) != 28 {
		t.Fatalf("%d leaks, want 28", len(leaks))
	}
	for _, l := range leaks {
		if l.Title != "memory leak in __netif_set_xps_queue" || l.Jiffies < 4294000000 {
			t.Errorf("leak %q at jiffies %d", l.Title, l.Jiffies)
		}
	}
}
