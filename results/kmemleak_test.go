package results

import "testing"

func TestParseKmemleak(t *testing.T) {
	// 6.1 prints addresses in brackets, 6.12 adds the backtrace's crc.
	text := `unreferenced object 0xffff888006a0c000 (size 1024):
  comm "softirq", pid 0, jiffies 4294893000 (age 12.250s)
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<ffffffff8148a2b6>] kmalloc_trace+0x26/0x60
    [<ffffffff8212c3a1>] __alloc_skb+0xd1/0x2a0
    [<ffffffff82a1be20>] veth_xmit.cold+0x10/0x40
    [<ffffffff8213f0d2>] dev_hard_start_xmit+0x112/0x3d0
unreferenced object 0xffff888006a0d000 (size 64):
  comm "init", pid 1, jiffies 4294895000 (age 7.5s)
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 8f2a7c47):
    __kmalloc_cache_noprof+0x2c3/0x380
    netif_napi_add_weight+0x40/0x120
`
	got := ParseKmemleak([]byte(text))
	want := []struct {
		title string
		age   float64
	}{{"memory leak in veth_xmit", 12.25}, {"memory leak in netif_napi_add_weight", 7.5}}
	if len(got) != len(want) {
		t.Fatalf("got %d leaks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Title != w.title || got[i].Age != w.age || got[i].Type != CrashMemoryLeak || got[i].Report == "" {
			t.Errorf("leak %d = %q age %v type %s, want %q age %v", i, got[i].Title, got[i].Age, got[i].Type, w.title, w.age)
		}
	}
	if n := len(ParseKmemleak(nil)); n != 0 {
		t.Errorf("empty report: %d leaks", n)
	}
}
