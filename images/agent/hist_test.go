package agent

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"napilab/internal/wire"
)

func TestHistBuckets(t *testing.T) {
	if got := histIndex(histMax); got != histBuckets-1 {
		t.Fatalf("histIndex(histMax) = %d, want the last bucket %d", got, histBuckets-1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	prev := -1
	check := func(v uint64) {
		i := histIndex(v)
		lo, w := histBounds(i)
		if v < lo || v >= lo+w {
			t.Fatalf("value %d in bucket %d [%d, %d)", v, i, lo, lo+w)
		}
		if lo >= 2*histSub && w*histSub > lo {
			t.Fatalf("bucket %d [%d, %d) wider than 1/%d of its values", i, lo, lo+w, histSub)
		}
	}
	for v := range uint64(1 << 20) {
		check(v)
		if i := histIndex(v); i < prev || i > prev+1 {
			t.Fatalf("histIndex(%d) = %d after %d: not monotonic and dense", v, i, prev)
		}
		prev = histIndex(v)
	}
	for range 100000 {
		check(r.Uint64N(histMax + 1))
	}
}

func TestHistPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	us := float64(time.Microsecond)
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"constant 37us", func() time.Duration { return 37 * time.Microsecond }},
		{"uniform 1us-1ms", func() time.Duration { return time.Duration(us + r.Float64()*999*us) }},
		{"exponential mean 40us", func() time.Duration { return time.Duration(5*us + r.ExpFloat64()*40*us) }},
		{"lognormal median 200us", func() time.Duration { return time.Duration(200 * us * math.Exp(r.NormFloat64())) }},
		{"bimodal 20us and 5ms", func() time.Duration {
			if r.IntN(100) < 97 {
				return time.Duration(20*us + r.Float64()*us)
			}
			return time.Duration(5000*us + r.Float64()*100*us)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			vals := make([]time.Duration, 200000)
			for i := range vals {
				vals[i] = tc.gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			s := h.Summary()
			if s.Count != uint64(len(vals)) {
				t.Errorf("count %d, want %d", s.Count, len(vals))
			}
			if want := float64(vals[len(vals)-1]) / 1e3; s.Max != want {
				t.Errorf("max %v us, want exactly %v", s.Max, want)
			}
			for _, q := range []struct {
				name     string
				permille uint64
				got      float64
			}{{"p5", 50, s.P5}, {"p50", 500, s.P50}, {"p90", 900, s.P90}, {"p95", 950, s.P95}, {"p99", 990, s.P99}, {"p99.9", 999, s.P999}} {
				want := float64(vals[rank(q.permille, uint64(len(vals)))-1]) / 1e3
				if math.Abs(q.got-want) > 0.02*want {
					t.Errorf("%s %v us, want %v within 2%%", q.name, q.got, want)
				}
			}
			if !(s.P5 <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P95 && s.P95 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) {
				t.Errorf("percentiles out of order: %+v", s)
			}
		})
	}
}

func TestHistEdges(t *testing.T) {
	if s := newHist().Summary(); *s != (wire.Latency{}) {
		t.Errorf("empty summary %+v, want zeros", s)
	}
	h := newHist()
	h.Record(-time.Second)
	h.Record(time.Minute)
	s := h.Summary()
	if s.Count != 2 || s.P50 != 0 || s.Max != 60e6 || s.P999 > s.Max || s.P999 < 9.9e6 {
		t.Errorf("summary of -1s and 1m: %+v, want count 2, p50 0, p99.9 ~10s, max 60e6 us", s)
	}
}

func TestHistConcurrent(t *testing.T) {
	h := newHist()
	const workers, each = 8, 20000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				h.Record(time.Duration(w*each+i) * time.Nanosecond)
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			if s := h.Summary(); s.P50 > s.Max || s.Count > workers*each {
				t.Errorf("summary during records: %+v", s)
			}
		}
	}()
	wg.Wait()
	<-done
	s := h.Summary()
	if s.Count != workers*each || s.Max != float64(workers*each-1)/1e3 {
		t.Errorf("count %d max %v, want %d and %v", s.Count, s.Max, workers*each, float64(workers*each-1)/1e3)
	}
}

func BenchmarkHistRecord(b *testing.B) {
	h := newHist()
	b.RunParallel(func(pb *testing.PB) {
		d := 17 * time.Microsecond
		for pb.Next() {
			h.Record(d)
			d += 13
		}
	})
}
