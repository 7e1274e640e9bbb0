package stats

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	// aliased: the package has a func floats
	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/combin"
)

const (
	cmpMethod = "Mann-Whitney U (two-sided) and a bootstrap 95% interval of the median ratio; " +
		"a difference counts when both agree"
	cmpResamples = 10000 // bootstrap resamples per metric
)

// Sample is one run's value of one metric.
type Sample struct {
	Metric string  `json:"metric"` // metric name, e.g. "softnet.time_squeeze"
	Kernel string  `json:"kernel"` // the kernel's label, as passed to Compare
	Run    int     `json:"run"`    // run index; kept for provenance, runs are not paired
	Value  float64 `json:"value"`  // non-finite values are dropped and counted in the row's Note
}

// Summary describes one kernel's values of one metric; the statistics are NaN
// when N is 0. Quartiles interpolate between order statistics (R's type 7).
type Summary struct {
	N      int     // number of finite values
	Median float64 // the median; the mean of the two middle values for even N
	Q1, Q3 float64 // the first and third quartiles
	Min    float64 // the smallest value
	Max    float64 // the largest value
}

// CompareRow is the comparison of one metric.
type CompareRow struct {
	Metric  string  // metric name
	A, B    Summary // each kernel's values
	Ratio   float64 // median(B)/median(A): ±Inf when only A's median is 0, NaN when both are
	RatioLo float64 // lower end of the bootstrap 95% interval of Ratio; NaN when it is undefined
	RatioHi float64 // upper end of the bootstrap 95% interval of Ratio; NaN when it is undefined
	P       float64 // two-sided Mann-Whitney U p-value; NaN when a kernel has no values
	Beyond  bool    // P < Alpha and the ratio interval excludes 1
	Note    string  // why the row cannot be trusted or decided, if it cannot
}

// Comparison is the per-metric verdict of kernel B against kernel A.
type Comparison struct {
	A      string       `json:"a"`      // baseline kernel label
	B      string       `json:"b"`      // candidate kernel label
	Alpha  float64      `json:"alpha"`  // significance level of the rank test
	Method string       `json:"method"` // the test, in words
	Rows   []CompareRow `json:"rows"`   // one per metric, in order of first appearance
}

// Compare asks, for every metric found in samples, whether kernel b differs
// from kernel a beyond the run-to-run noise; samples of other kernels are
// ignored. alpha outside (0, 1) means 0.05. seed makes the bootstrap
// intervals reproducible (each metric draws from its own seeded stream).
//
//	c := stats.Compare("v6.12", "v6.12+patch", samples, 0.05, seed)
//	c.WriteText(os.Stdout)
func Compare(a, b string, samples []Sample, alpha float64, seed int64) *Comparison {
	if !(alpha > 0 && alpha < 1) {
		alpha = 0.05
	}
	c := &Comparison{A: a, B: b, Alpha: alpha, Method: cmpMethod}
	type values struct {
		a, b    []float64
		dropped int
	}
	var order []string
	byMetric := map[string]*values{}
	for _, s := range samples {
		if s.Kernel != a && s.Kernel != b {
			continue
		}
		v := byMetric[s.Metric]
		if v == nil {
			v = &values{}
			byMetric[s.Metric] = v
			order = append(order, s.Metric)
		}
		switch {
		case math.IsNaN(s.Value) || math.IsInf(s.Value, 0):
			v.dropped++
		case s.Kernel == a:
			v.a = append(v.a, s.Value)
		default:
			v.b = append(v.b, s.Value)
		}
	}
	for _, m := range order {
		v := byMetric[m]
		h := fnv.New64a()
		h.Write([]byte(m))
		rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
		c.Rows = append(c.Rows, c.cmpRow(m, v.a, v.b, v.dropped, rng))
	}
	return c
}

func (c *Comparison) cmpRow(metric string, xa, xb []float64, dropped int, rng *rand.Rand) CompareRow {
	r := CompareRow{Metric: metric, A: cmpSummarize(xa), B: cmpSummarize(xb),
		P: math.NaN(), RatioLo: math.NaN(), RatioHi: math.NaN()}
	r.Ratio = cmpRatio(r.A.Median, r.B.Median)
	var notes []string
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d non-finite values dropped", dropped))
	}
	if r.A.N == 0 {
		notes = append(notes, "no samples for kernel "+c.A)
	}
	if r.B.N == 0 {
		notes = append(notes, "no samples for kernel "+c.B)
	}
	if r.A.N > 0 && r.B.N > 0 {
		r.P = cmpMannWhitney(xa, xb)
		if !math.IsNaN(r.Ratio) {
			r.RatioLo, r.RatioHi = cmpBootstrap(xa, xb, rng, cmpRatio)
		}
		r.Beyond = r.P < c.Alpha && (r.RatioLo > 1 || r.RatioHi < 1)
		if minP := cmpMinP(r.A.N, r.B.N); minP >= c.Alpha {
			n := fmt.Sprintf("n=%d per kernel", r.A.N)
			if r.A.N != r.B.N {
				n = fmt.Sprintf("n=%d vs %d", r.A.N, r.B.N)
			}
			notes = append(notes, fmt.Sprintf("%s: the rank test cannot reach p<%g (smallest p is %.3g)",
				n, c.Alpha, minP))
		}
	}
	if r.A.Median < 0 || r.B.Median < 0 {
		notes = append(notes, "negative median: B/A is not a scale factor")
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

func cmpSummarize(x []float64) Summary {
	if len(x) == 0 {
		nan := math.NaN()
		return Summary{Median: nan, Q1: nan, Q3: nan, Min: nan, Max: nan}
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return Summary{N: len(s), Median: cmpQuantile(s, 0.5), Q1: cmpQuantile(s, 0.25),
		Q3: cmpQuantile(s, 0.75), Min: s[0], Max: s[len(s)-1]}
}

// cmpQuantile is R's type-7 quantile of sorted s. gonum's stat.Quantile offers
// types 1 and 4, both of which put the median of an even-sized sample on the
// lower middle value; with 4-10 runs per kernel that bias is visible.
func cmpQuantile(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p
	i := int(h)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

func cmpRatio(a, b float64) float64 {
	if a == 0 && b == 0 {
		return math.NaN()
	}
	return b / a // ±Inf when a is 0
}

// cmpBootstrap resamples each kernel's values independently and returns the
// 2.5% and 97.5% percentiles of of(median A, median B) over the resamples:
// the median ratio (cmpRatio; a resample whose medians are both 0 counts
// as ratio 1, no difference) or their difference. Hand-written: benchmath
// gives an interval of each median, not of their ratio.
func cmpBootstrap(xa, xb []float64, rng *rand.Rand, of func(a, b float64) float64) (lo, hi float64) {
	vals := make([]float64, cmpResamples)
	ra, rb := make([]float64, len(xa)), make([]float64, len(xb))
	for i := range vals {
		for j := range ra {
			ra[j] = xa[rng.IntN(len(xa))]
		}
		for j := range rb {
			rb[j] = xb[rng.IntN(len(xb))]
		}
		slices.Sort(ra)
		slices.Sort(rb)
		vals[i] = of(cmpQuantile(ra, 0.5), cmpQuantile(rb, 0.5))
		if math.IsNaN(vals[i]) {
			vals[i] = 1
		}
	}
	slices.Sort(vals)
	// Empirical picks order statistics without arithmetic, so infinite ratios stay intact.
	return stat.Quantile(0.025, stat.Empirical, vals, nil), stat.Quantile(0.975, stat.Empirical, vals, nil)
}

// cmpMannWhitney returns the two-sided Mann-Whitney U p-value from
// benchmath (benchstat's): exact for the lab's sample sizes, ties included;
// 1 when every value is the same.
func cmpMannWhitney(xa, xb []float64) float64 {
	th := benchmath.DefaultThresholds
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(xa), &th), benchmath.NewSample(slices.Clone(xb), &th)).P
}

// cmpMinP is the smallest two-sided p a permutation test can give for samples
// of n1 and n2: 2/C(n1+n2, n1), the two arrangements without overlap. Kept
// here: benchmath only says it as a warning's text, and RunsNeeded needs
// the number.
func cmpMinP(n1, n2 int) float64 {
	return min(1, 2*math.Exp(-combin.LogGeneralizedBinomial(float64(n1+n2), float64(n1))))
}

// cmpNum is a float64 whose JSON form survives NaN (null) and ±Inf ("inf", "-inf").
type cmpNum float64

func (n cmpNum) MarshalJSON() ([]byte, error) {
	switch f := float64(n); {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	default:
		return json.Marshal(f)
	}
}

func (n *cmpNum) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*n = cmpNum(math.NaN())
	case `"inf"`:
		*n = cmpNum(math.Inf(1))
	case `"-inf"`:
		*n = cmpNum(math.Inf(-1))
	default:
		return json.Unmarshal(b, (*float64)(n))
	}
	return nil
}

type cmpSummaryJSON struct {
	N      int    `json:"n"`
	Median cmpNum `json:"median"`
	Q1     cmpNum `json:"q1"`
	Q3     cmpNum `json:"q3"`
	Min    cmpNum `json:"min"`
	Max    cmpNum `json:"max"`
}

// MarshalJSON writes the statistics of an empty summary as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(cmpSummaryJSON{s.N, cmpNum(s.Median), cmpNum(s.Q1), cmpNum(s.Q3), cmpNum(s.Min), cmpNum(s.Max)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j cmpSummaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Summary{j.N, float64(j.Median), float64(j.Q1), float64(j.Q3), float64(j.Min), float64(j.Max)}
	return nil
}

type cmpRowJSON struct {
	Metric  string  `json:"metric"`
	A       Summary `json:"a"`
	B       Summary `json:"b"`
	Ratio   cmpNum  `json:"ratio"`
	RatioLo cmpNum  `json:"ratio_lo"`
	RatioHi cmpNum  `json:"ratio_hi"`
	P       cmpNum  `json:"p"`
	Beyond  bool    `json:"beyond"`
	Note    string  `json:"note,omitempty"`
}

// MarshalJSON writes NaN as null and ±Inf as "inf" and "-inf".
func (r CompareRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(cmpRowJSON{r.Metric, r.A, r.B, cmpNum(r.Ratio), cmpNum(r.RatioLo), cmpNum(r.RatioHi),
		cmpNum(r.P), r.Beyond, r.Note})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *CompareRow) UnmarshalJSON(b []byte) error {
	var j cmpRowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = CompareRow{j.Metric, j.A, j.B, float64(j.Ratio), float64(j.RatioLo), float64(j.RatioHi),
		float64(j.P), j.Beyond, j.Note}
	return nil
}

// WriteJSON writes c as indented JSON; see CompareRow.MarshalJSON for NaN and Inf.
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(c)
}

// WriteText writes c as an aligned table, the notes and the method. Write
// errors are not reported; w is expected to be a terminal or a buffer.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", c.A, c.B)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cells := range c.Cells() {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	c.cmpNotes(w, "  ")
	fmt.Fprintf(w, "\n%s (alpha %g).\n", c.Method, c.Alpha)
}

// WriteMarkdown writes c as a GitHub-flavoured markdown table followed by the
// notes and the method. Write errors are not reported, as for WriteText.
func (c *Comparison) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "A: `%s`, B: `%s`\n\n", c.A, c.B)
	writeMarkdownTable(w, c.Cells(), "|---|--:|--:|--:|--:|---|")
	c.cmpNotes(w, "- ")
	fmt.Fprintf(w, "\n%s (alpha %g).\n", c.Method, c.Alpha)
}

// writeMarkdownTable writes lines of cells (the first is the header) as a
// markdown table with the given separator line, escaping | in cells.
func writeMarkdownTable(w io.Writer, lines [][]string, sep string) {
	for i, cells := range lines {
		for j := range cells {
			cells[j] = strings.ReplaceAll(cells[j], "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		if i == 0 {
			fmt.Fprintln(w, sep)
		}
	}
}

// Cells returns the header and one line of cells per row: the table of
// WriteText, WriteMarkdown and the HTML page.
func (c *Comparison) Cells() [][]string {
	lines := [][]string{{"metric", "A median [q1..q3]", "B median [q1..q3]", "B/A [lo..hi]", "p", "verdict"}}
	for _, r := range c.Rows {
		ratio := FormatNum(r.Ratio)
		if !math.IsNaN(r.RatioLo) {
			ratio += " [" + FormatNum(r.RatioLo) + ".." + FormatNum(r.RatioHi) + "]"
		}
		p := "n/a"
		if !math.IsNaN(r.P) {
			p = strconv.FormatFloat(r.P, 'g', 3, 64)
		}
		verdict := "within noise"
		switch {
		case r.A.N == 0 || r.B.N == 0:
			verdict = "missing"
		case r.Beyond && r.B.Median > r.A.Median:
			verdict = "B higher"
		case r.Beyond:
			verdict = "B lower"
		}
		lines = append(lines, []string{r.Metric, cmpSpread(r.A), cmpSpread(r.B), ratio, p, verdict})
	}
	return lines
}

func (c *Comparison) cmpNotes(w io.Writer, bullet string) {
	first := true
	for _, r := range c.Rows {
		if r.Note == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nNotes:")
			first = false
		}
		fmt.Fprintf(w, "%s%s: %s\n", bullet, r.Metric, r.Note)
	}
}

func cmpSpread(s Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	return FormatNum(s.Median) + " [" + FormatNum(s.Q1) + ".." + FormatNum(s.Q3) + "]"
}

// FormatNum prints 4 significant digits, but whole numbers from 1000 up in full.
func FormatNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
