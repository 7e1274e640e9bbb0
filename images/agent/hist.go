package agent

import (
	"math/bits"
	"sync/atomic"
	"time"

	"napilab/internal/wire"
)

// Histogram geometry, HDR style, in nanoseconds: values below 2*histSub are
// exact; above, every power of two is split into histSub equal buckets, so a
// bucket is at most 1/histSub (0.8%) of its values wide and its midpoint is
// within 0.4% of any of them. 3478 buckets cover 0 to histMax.
const (
	histBits = 7
	histSub  = 1 << histBits
	histMax  = uint64(10 * time.Second) // longer values count in the last bucket
)

var histBuckets = histIndex(histMax) + 1

// hist is a latency histogram. Record is lock-free and safe for concurrent
// use with itself and with Summary.
type hist struct {
	counts []atomic.Uint64
	max    atomic.Int64 // nanoseconds, exact
}

func newHist() *hist {
	return &hist{counts: make([]atomic.Uint64, histBuckets)}
}

// histIndex returns the bucket holding v nanoseconds.
func histIndex(v uint64) int {
	e := max(bits.Len64(v)-histBits-1, 0)
	return e<<histBits + int(v>>e)
}

// histBounds returns the lowest value and the width of bucket i.
func histBounds(i int) (lo, width uint64) {
	if i < 2*histSub {
		return uint64(i), 1
	}
	e := i>>histBits - 1
	return uint64(i-e<<histBits) << e, 1 << e
}

// Record adds one latency; negative durations count as zero.
func (h *hist) Record(d time.Duration) {
	d = max(d, 0)
	// Max first: once Summary sees the count it sees a max at least as big.
	for m := h.max.Load(); int64(d) > m && !h.max.CompareAndSwap(m, int64(d)); m = h.max.Load() {
	}
	h.counts[histIndex(min(uint64(d), histMax))].Add(1)
}

// Summary returns the count, percentiles and max in microseconds. A
// percentile is its bucket's midpoint, never above the exact max.
func (h *hist) Summary() *wire.Latency {
	snap := make([]uint64, len(h.counts))
	var n uint64
	for i := range h.counts {
		snap[i] = h.counts[i].Load()
		n += snap[i]
	}
	mx := float64(h.max.Load()) / 1e3
	s := &wire.Latency{Count: n, Max: mx}
	if n == 0 {
		return s
	}
	qs := []struct {
		permille uint64
		dst      *float64
	}{{50, &s.P5}, {500, &s.P50}, {900, &s.P90}, {950, &s.P95}, {990, &s.P99}, {999, &s.P999}}
	var cum uint64
	j := 0
	for i, c := range snap {
		cum += c
		for ; j < len(qs) && cum >= rank(qs[j].permille, n); j++ {
			lo, w := histBounds(i)
			*qs[j].dst = min((float64(lo)+float64(w-1)/2)/1e3, mx)
		}
	}
	return s
}

// rank is the 1-based rank of the permille quantile among n values, in
// integers so 0.99*100 is not 99.00000000000001 and rank 100.
func rank(permille, n uint64) uint64 {
	return max((permille*n+999)/1000, 1)
}
