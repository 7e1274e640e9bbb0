package runner

import (
	"testing"
	"time"
)

// A thread that exits between two reads does not take its earlier time off
// the difference, and no difference is negative.
func TestCPUUseSince(t *testing.T) {
	th := func(ran, waited int) cpuUse {
		return cpuUse{ran: time.Duration(ran) * time.Second, waited: time.Duration(waited) * time.Second}
	}
	from := cpuUse{ran: 13 * time.Second, waited: 7 * time.Second,
		threads: map[string]cpuUse{"1": th(3, 2), "2": th(10, 5)}}
	// thread 2 (an idle worker) exited; thread 1 ran 1 s and waited 4 s more; thread 3 is new
	now := cpuUse{ran: 5 * time.Second, waited: 7 * time.Second,
		threads: map[string]cpuUse{"1": th(4, 6), "3": th(1, 1)}}
	ran, waited := now.since(from)
	if ran != 2*time.Second || waited != 5*time.Second {
		t.Errorf("since = ran %v waited %v, want 2s and 5s", ran, waited)
	}
	if ran, waited := th(1, 1).since(th(3, 3)); ran != 0 || waited != 0 {
		t.Errorf("totals going back gave %v %v, want 0", ran, waited)
	}
}
