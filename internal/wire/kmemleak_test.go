package wire

import (
	"math"
	"testing"
)

func TestKmemleakUptime(t *testing.T) {
	r := KmemleakReport{Clock: [2]TickPoint{{Jiffies: 4294900000, Uptime: 30}, {Jiffies: 4294905000, Uptime: 35}}}
	if up, ok := r.Uptime(4294890000); !ok || math.Abs(up-20) > 1e-9 {
		t.Errorf("Uptime = %v, %v; want 20 (HZ 1000)", up, ok)
	}
	if _, ok := (&KmemleakReport{}).Uptime(1); ok {
		t.Error("no clock readings gave a date")
	}
}
