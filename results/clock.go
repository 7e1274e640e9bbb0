package results

import "math"

// GuestClock places snapshots on the host's timeline where the guest read
// them: the guest's time plus the clock offset, the smallest gap seen
// between a reading's end and its reply's arrival (the fastest reply
// bounds the offset). Snapshots without a guest time (fakes) stay at their
// arrival.
type GuestClock struct {
	off float64
	ok  bool
}

// NewGuestClock learns the offset from n snapshots: at(i) is the i-th's
// arrival (host seconds), guest time and reading time (seconds).
func NewGuestClock(n int, at func(i int) (host, t, took float64)) GuestClock {
	c := GuestClock{off: math.Inf(1)}
	for i := range n {
		if host, t, took := at(i); t > 0 {
			c.off, c.ok = min(c.off, host-(t+took)), true
		}
	}
	return c
}

// Known says the clock learnt its offset (a snapshot had a guest time).
func (c GuestClock) Known() bool { return c.ok }

// At returns the host time of guest time t, or host when the snapshot has
// no guest time.
func (c GuestClock) At(host, t float64) float64 {
	if !c.ok || t <= 0 {
		return host
	}
	return t + c.off
}
