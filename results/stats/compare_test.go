package stats

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// cmpSamples turns per-kernel values of one metric into samples, interleaved
// as the lab runs them.
func cmpSamples(metric string, a, b []float64) []Sample {
	var s []Sample
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			s = append(s, Sample{Metric: metric, Kernel: "A", Run: i, Value: a[i]})
		}
		if i < len(b) {
			s = append(s, Sample{Metric: metric, Kernel: "B", Run: i, Value: b[i]})
		}
	}
	return s
}

func cmpNormal(rng *rand.Rand, n int, mean, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean + sd*rng.NormFloat64()
	}
	return x
}

func cmpClose(a, b float64) bool { return math.Abs(a-b) < 1e-9 || a == b }

func TestCompareMannWhitney(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		// Exact: the only most extreme arrangements are A all below or all above B.
		{"no overlap 5v5", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{"no overlap 3v3", []float64{1, 2, 3}, []float64{4, 5, 6}, 2.0 / 20},
		// U=1: arrangements with U<=1 are {1,2,3} and {1,2,4} of C(6,3)=20.
		{"one swap 3v3", []float64{1, 2, 4}, []float64{3, 5, 6}, 2 * 2.0 / 20},
		{"interleaved", []float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}, 1},
		{"identical with ties", []float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{"all equal", []float64{7, 7, 7}, []float64{7, 7}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := cmpMannWhitney(tc.a, tc.b); !cmpClose(p, tc.want) {
				t.Errorf("p = %v, want %v", p, tc.want)
			}
			if p := cmpMannWhitney(tc.b, tc.a); !cmpClose(p, tc.want) {
				t.Errorf("swapped: p = %v, want %v", p, tc.want)
			}
		})
	}
}

// TestCompareUTestEnumerated checks the U test, ties included, against
// every placement of the pooled values (the permutation distribution of U
// with mid-ranks): p = P(|U - n1 n2/2| >= |u - n1 n2/2|).
func TestCompareUTestEnumerated(t *testing.T) {
	for _, tc := range [][2][]float64{
		{{1, 2, 3, 3, 4}, {3, 4, 5, 6, 7}},
		{{1, 1, 2, 2}, {2, 3, 3, 3}},
		{{5, 6, 7, 8}, {1, 2, 3, 4, 9}},
		{{0, 0, 0, 1}, {0, 1, 1, 1}},
	} {
		a, b := tc[0], tc[1]
		pooled := append(slices.Clone(a), b...)
		n1 := len(a)
		u := func(inA func(int) bool) float64 { // pairs with the A value above, ties half
			var s float64
			for i := range pooled {
				for j := range pooled {
					if inA(i) && !inA(j) {
						switch {
						case pooled[i] > pooled[j]:
							s++
						case pooled[i] == pooled[j]:
							s += 0.5
						}
					}
				}
			}
			return s
		}
		mu := float64(n1*len(b)) / 2
		obs := math.Abs(u(func(i int) bool { return i < n1 }) - mu)
		var extreme, total int
		for mask := 0; mask < 1<<len(pooled); mask++ {
			if bits.OnesCount(uint(mask)) != n1 {
				continue
			}
			total++
			if math.Abs(u(func(i int) bool { return mask&(1<<i) != 0 })-mu) >= obs-1e-9 {
				extreme++
			}
		}
		want := float64(extreme) / float64(total)
		if got := cmpMannWhitney(a, b); math.Abs(got-want) > 1e-9 {
			t.Errorf("%v vs %v: p = %v, want %v (%d of %d placements)", a, b, got, want, extreme, total)
		}
	}
}

// TestCompareExactNearNormal checks the exact path at n=40 against the
// normal approximation, computed here from pair counts.
func TestCompareExactNearNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		a, b := cmpNormal(rng, 40, 0, 1), cmpNormal(rng, 40, 0.3, 1)
		u := 0.0
		for _, x := range a {
			for _, y := range b {
				if x > y {
					u++
				}
			}
		}
		z := (math.Abs(u-800) - 0.5) / math.Sqrt(1600.0*81/12)
		normal := math.Erfc(z / math.Sqrt2)
		if exact := cmpMannWhitney(a, b); math.Abs(exact-normal) > 0.005 {
			t.Errorf("U=%v: exact p %v, normal p %v", u, exact, normal)
		}
	}
}

func TestCompareBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := cmpNormal(rng, 12, 100, 5), cmpNormal(rng, 12, 150, 5)
	s := cmpSamples("m", a, b)
	r1, r2 := Compare("A", "B", s, 0.05, 42).Rows[0], Compare("A", "B", s, 0.05, 42).Rows[0]
	if r1.RatioLo != r2.RatioLo || r1.RatioHi != r2.RatioHi {
		t.Errorf("same seed, different intervals: %v..%v and %v..%v", r1.RatioLo, r1.RatioHi, r2.RatioLo, r2.RatioHi)
	}
	if r1.RatioLo > 1.5 || r1.RatioHi < 1.5 || !(r1.RatioLo <= r1.Ratio && r1.Ratio <= r1.RatioHi) {
		t.Errorf("interval %v..%v (ratio %v) misses the true ratio 1.5", r1.RatioLo, r1.RatioHi, r1.Ratio)
	}
	if !r1.Beyond {
		t.Errorf("1.5x with n=12 is not beyond the noise: %+v", r1)
	}
	if r3 := Compare("A", "B", s, 0.05, 43).Rows[0]; r3.RatioLo == r1.RatioLo && r3.RatioHi == r1.RatioHi {
		t.Errorf("seeds 42 and 43 gave the same interval %v..%v", r3.RatioLo, r3.RatioHi)
	}

	// B = 2*A with 1% noise: the interval sits near 2.
	a = cmpNormal(rng, 8, 1000, 50)
	b = make([]float64, len(a))
	for i := range a {
		b[i] = 2 * a[i] * (1 + 0.01*rng.NormFloat64())
	}
	if r := Compare("A", "B", cmpSamples("m", a, b), 0.05, 1).Rows[0]; r.RatioLo <= 1 || !r.Beyond {
		t.Errorf("B=2A: interval %v..%v, beyond %v", r.RatioLo, r.RatioHi, r.Beyond)
	}

	// Same distribution: the interval should hold 1 about 95% of the time.
	covered, trials := 0, 40
	for seed := range int64(trials) {
		a, b := cmpNormal(rng, 15, 100, 10), cmpNormal(rng, 15, 100, 10)
		r := Compare("A", "B", cmpSamples("m", a, b), 0.05, seed).Rows[0]
		if r.RatioLo <= 1 && 1 <= r.RatioHi {
			covered++
		}
		if r.Beyond && r.P >= 0.05 {
			t.Errorf("beyond with p=%v", r.P)
		}
	}
	t.Logf("interval held 1 in %d of %d trials", covered, trials)
	if covered < trials*85/100 {
		t.Errorf("interval held 1 in %d of %d same-distribution trials", covered, trials)
	}
}

func TestCompareBeyond(t *testing.T) {
	r := Compare("A", "B", cmpSamples("m", []float64{10, 11, 12}, []float64{20, 21, 22}), 0.05, 1).Rows[0]
	if r.Beyond || !cmpClose(r.P, 0.1) || r.RatioLo <= 1 {
		t.Errorf("3v3 separated: beyond %v, p %v, interval %v..%v", r.Beyond, r.P, r.RatioLo, r.RatioHi)
	}
	if !strings.Contains(r.Note, "n=3 per kernel: the rank test cannot reach p<0.05") {
		t.Errorf("note %q does not say why", r.Note)
	}
	// Tied counters: the normal approximation alone would give p=0.047.
	r = Compare("A", "B", cmpSamples("m", []float64{0, 0, 0}, []float64{5, 5, 5}), 0.05, 1).Rows[0]
	if r.Beyond || !cmpClose(r.P, 0.1) {
		t.Errorf("3v3 tied: beyond %v, p %v", r.Beyond, r.P)
	}
	r = Compare("A", "B", cmpSamples("m", []float64{10, 11, 12}, []float64{20, 21, 22, 23}), 0.05, 1).Rows[0]
	if !strings.Contains(r.Note, "n=3 vs 4") {
		t.Errorf("3v4 note %q", r.Note)
	}
	a := []float64{10, 11, 12, 13, 10.5, 11.5, 12.5, 13.5}
	b := []float64{20, 21, 22, 23, 20.5, 21.5, 22.5, 23.5}
	r = Compare("A", "B", cmpSamples("m", a, b), 0.05, 1).Rows[0]
	if !r.Beyond || r.Note != "" || !cmpClose(r.P, 2.0/12870) {
		t.Errorf("8v8 separated: %+v", r)
	}
}

func TestCompareSummary(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want Summary
	}{
		{[]float64{5, 1, 3}, Summary{N: 3, Median: 3, Q1: 2, Q3: 4, Min: 1, Max: 5}},
		{[]float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Q1: 1.75, Q3: 3.25, Min: 1, Max: 4}},
		{[]float64{7}, Summary{N: 1, Median: 7, Q1: 7, Q3: 7, Min: 7, Max: 7}},
	} {
		if got := cmpSummarize(tc.x); got != tc.want {
			t.Errorf("summary of %v = %+v, want %+v", tc.x, got, tc.want)
		}
	}
}

func TestCompareEdgeRows(t *testing.T) {
	s := cmpSamples("zero_to_some", []float64{0, 0, 0, 0}, []float64{3, 4, 5, 6})
	s = append(s, cmpSamples("zero_both", []float64{0, 0, 0}, []float64{0, 0, 0})...)
	s = append(s, cmpSamples("only_a", []float64{1, 2, 3}, nil)...)
	s = append(s, cmpSamples("nan", []float64{1, math.NaN(), 3}, []float64{1, 2})...)
	s = append(s, Sample{Metric: "other", Kernel: "C", Value: 1})
	c := Compare("A", "B", s, 0.05, 1)
	if len(c.Rows) != 4 {
		t.Fatalf("rows %d, want 4 (kernel C ignored)", len(c.Rows))
	}
	if r := c.Rows[0]; !math.IsInf(r.Ratio, 1) || !math.IsInf(r.RatioLo, 1) {
		t.Errorf("zero A median: ratio %v, interval %v..%v", r.Ratio, r.RatioLo, r.RatioHi)
	}
	if r := c.Rows[1]; !math.IsNaN(r.Ratio) || !math.IsNaN(r.RatioLo) || r.P != 1 || r.Beyond {
		t.Errorf("zero medians: %+v", r)
	}
	r := c.Rows[2]
	if r.B.N != 0 || !math.IsNaN(r.B.Median) || !math.IsNaN(r.P) || r.Beyond || !strings.Contains(r.Note, "no samples for kernel B") {
		t.Errorf("metric only on A: %+v", r)
	}
	if r := c.Rows[3]; r.A.N != 2 || !strings.Contains(r.Note, "1 non-finite values dropped") {
		t.Errorf("NaN sample: %+v", r)
	}
	var buf bytes.Buffer
	c.WriteText(&buf)
	for _, want := range []string{"inf [inf..inf]", "0 [0..0]", "n/a", "missing"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

func cmpExample() *Comparison {
	s := cmpSamples("net.rx_pps", []float64{812000, 809500, 815200, 810100, 811900, 813400, 808800, 812700},
		[]float64{901200, 899800, 904100, 902500, 898700, 903300, 900900, 901800})
	s = append(s, cmpSamples("softnet.time_squeeze", []float64{12, 15, 9}, []float64{3, 2, 4})...)
	s = append(s, cmpSamples("lat|p99_us", []float64{51.2, 49.8, 50.5, 52.1}, []float64{50.9, 51.7, 49.9, 50.2})...)
	for i := range s {
		s[i].Kernel = map[string]string{"A": "v6.12", "B": "v6.12+napi-patch"}[s[i].Kernel]
	}
	return Compare("v6.12", "v6.12+napi-patch", s, 0.05, 1)
}

// TestCompareWriteText checks column alignment and testdata/compare/text.golden
// (rewritten by -update).
func TestCompareWriteText(t *testing.T) {
	var buf bytes.Buffer
	cmpExample().WriteText(&buf)
	lines := strings.Split(buf.String(), "\n")
	header := lines[3]
	var cols []int
	for _, name := range []string{"A median", "B median", "B/A", "p ", "verdict"} {
		cols = append(cols, strings.Index(header, name))
	}
	for _, line := range lines[4:7] {
		for _, c := range cols {
			if len(line) <= c || line[c] == ' ' || line[c-2:c] != "  " {
				t.Errorf("column at %d misaligned in %q", c, line)
			}
		}
	}
	golden := filepath.Join("testdata", "compare", "text.golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("text differs from %s (run with -update):\n%s", golden, buf.String())
	}
}

func TestCompareWriteMarkdown(t *testing.T) {
	var buf bytes.Buffer
	c := cmpExample()
	c.WriteMarkdown(&buf)
	var table []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, "|") {
			table = append(table, line)
		}
	}
	if len(table) != 2+len(c.Rows) {
		t.Fatalf("table has %d lines, want header, separator and %d rows:\n%s", len(table), len(c.Rows), buf.String())
	}
	if !strings.HasPrefix(table[1], "|---|") {
		t.Errorf("separator %q", table[1])
	}
	for i, line := range table {
		// Cells split on unescaped pipes.
		if n := strings.Count(line, "|") - strings.Count(line, `\|`); n != 7 || !strings.HasSuffix(line, "|") {
			t.Errorf("line %d has %d pipes: %q", i, n, line)
		}
	}
	if !strings.Contains(table[4], `lat\|p99_us`) {
		t.Errorf("pipe in metric name not escaped: %q", table[4])
	}
}

func TestCompareJSON(t *testing.T) {
	c := cmpExample()
	s := cmpSamples("zero", []float64{0, 0}, []float64{0, 1})
	s = append(s, cmpSamples("only_b", nil, []float64{1})...)
	c.Rows = append(c.Rows, Compare("A", "B", s, 0.05, 1).Rows...)
	var first bytes.Buffer
	if err := c.WriteJSON(&first); err != nil {
		t.Fatal(err)
	}
	var back Comparison
	if err := json.Unmarshal(first.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := back.WriteJSON(&second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("round trip changed the JSON:\n%s\n%s", first.String(), second.String())
	}
	if r := back.Rows[len(back.Rows)-1]; r.A.N != 0 || !math.IsNaN(r.A.Median) || !math.IsNaN(r.P) {
		t.Errorf("decoded empty summary: %+v", r)
	}
	if r := back.Rows[len(back.Rows)-2]; !math.IsInf(r.Ratio, 1) {
		t.Errorf("decoded ratio %v, want +Inf", r.Ratio)
	}
	if back.Rows[0] != c.Rows[0] || back.Method != c.Method || back.Alpha != c.Alpha {
		t.Errorf("decoded %+v, want %+v", back.Rows[0], c.Rows[0])
	}
}
