package scenarios

import (
	"fmt"
	"time"

	"napilab/internal/wire"
	"napilab/results"
)

// NoStall checks that a load's sink got packets in every window.
type NoStall struct {
	Load   string   `yaml:"load"`
	Window Duration `yaml:"window"` // default 1s
	Min    uint64   `yaml:"min"`    // packets per window, default 1
}

func (x *NoStall) setDefaults() {
	if x.Window == 0 {
		x.Window = Duration(time.Second)
	}
	x.Min = max(x.Min, 1)
}

func (x *NoStall) check(k *checker, a *Assert) {
	k.loadRef(a.Pos, x.Load)
	if x.Window.D() < 100*time.Millisecond {
		k.c.add(a.Pos, "no-stall window %v: want at least 100ms", x.Window.D())
	}
}

func (x *NoStall) explain(*Assert) string {
	return fmt.Sprintf("%s's sink gets >= %d packets in every %v window", x.Load, x.Min, x.Window.D())
}

func (x *NoStall) name() string { return "no stall of " + x.Load }

func (x *NoStall) timingOnly() bool { return true }

func (x *NoStall) metrics() []string { return nil }

func (x *NoStall) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	w := x.Window.D()
	r := a.result(x)
	r.Bound = fmt.Sprintf(">= %d packets in every %v window", x.Min, w)
	sink, _ := rec.Load(x.Load)
	if sink == nil {
		r.Measured = "the load never ran to its end"
		return r
	}
	min, at, n := WindowMin(sink.Buckets, int(w.Milliseconds()/wire.BucketWidthMs))
	if n == 0 {
		r.Measured = fmt.Sprintf("no full window (received %d packets)", sink.Packets)
		return r
	}
	r.Measured = fmt.Sprintf("min %d packets per window over %d windows", min, n)
	if min < x.Min {
		r.Detail = fmt.Sprintf("the window starting %.1fs after the sink started got %d", float64(at*wire.BucketWidthMs)/1000, min)
	}
	r.Passed = min >= x.Min
	return r
}

// WindowMin slides a window of width buckets over the span from the first
// packet to the end and returns the smallest sum, where it starts, and the
// number of windows.
func WindowMin(b []uint64, width int) (min uint64, at, n int) {
	first := 0
	for first < len(b) && b[first] == 0 {
		first++
	}
	if width < 1 || len(b)-first < width {
		return 0, 0, 0
	}
	var sum uint64
	for i := first; i < first+width; i++ {
		sum += b[i]
	}
	min, at = sum, first
	for i := first + width; i < len(b); i++ {
		sum += b[i]
		sum -= b[i-width]
		if sum < min {
			min, at = sum, i-width+1
		}
	}
	return min, at, len(b) - first - width + 1
}
