package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"napilab/results/stats"
)

// The SVG helpers write inline SVG for the HTML reports: every piece of text
// goes through html.EscapeString, every attribute is a number or a constant.

// svgPalette colours series in order (Tableau 10).
var svgPalette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac", "#e15759"}

// Colours with a meaning.
const (
	svgRed   = "#d62728" // splats, failures
	svgA     = "#4e79a7" // comparison side A
	svgB     = "#f28e2b" // comparison side B
	svgGrid  = "#e4e4e4"
	svgInk   = "#333333"
	svgFaint = "#777777"
)

// svg accumulates the markup of one <svg> element.
type svg struct {
	b strings.Builder
}

func newSVG(w, h float64, label string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="%s" font-family="sans-serif" font-size="11">`,
		svgN(w), svgN(h), svgN(w), svgN(h), html.EscapeString(label))
	return s
}

// html closes the element and returns it for a template.
func (s *svg) html() template.HTML {
	s.b.WriteString("</svg>")
	return template.HTML(s.b.String()) // every text and attribute was escaped or numeric
}

func (s *svg) rect(x, y, w, h float64, fill string, extra string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, svgN(x), svgN(y), svgN(max(w, 0)), svgN(max(h, 0)), fill, extra)
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, extra string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`, svgN(x1), svgN(y1), svgN(x2), svgN(y2), stroke, svgN(width), extra)
}

func (s *svg) circle(x, y, r float64, fill, extra, tip string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%s" fill="%s"%s>`, svgN(x), svgN(y), svgN(r), fill, extra)
	s.title(tip)
	s.b.WriteString("</circle>")
}

// text writes an escaped label; anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor, fill, text string, extra string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" fill="%s"%s>%s</text>`, svgN(x), svgN(y), anchor, fill, extra, html.EscapeString(text))
}

// title adds a hover tooltip to the element being written.
func (s *svg) title(tip string) {
	if tip != "" {
		fmt.Fprintf(&s.b, "<title>%s</title>", html.EscapeString(tip))
	}
}

func (s *svg) polyline(xs, ys []float64, stroke string, width float64) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	for i := range xs {
		fmt.Fprintf(&pts, "%s,%s ", svgN(xs[i]), svgN(ys[i]))
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"/>`, strings.TrimSpace(pts.String()), stroke, svgN(width))
}

// area fills the region between the line through xs, ys and the level
// base, with a hover tooltip.
func (s *svg) area(xs, ys []float64, base float64, fill, tip string) {
	if len(xs) == 0 {
		return
	}
	var pts strings.Builder
	fmt.Fprintf(&pts, "%s,%s", svgN(xs[0]), svgN(base))
	for i := range xs {
		fmt.Fprintf(&pts, " %s,%s", svgN(xs[i]), svgN(ys[i]))
	}
	fmt.Fprintf(&pts, " %s,%s", svgN(xs[len(xs)-1]), svgN(base))
	fmt.Fprintf(&s.b, `<polygon points="%s" fill="%s">`, pts.String(), fill)
	s.title(tip)
	s.b.WriteString("</polygon>")
}

// raw appends trusted markup (an element built by these helpers).
func (s *svg) raw(m string) { s.b.WriteString(m) }

// svgN prints a coordinate with at most two decimals.
func svgN(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// scale maps a data interval onto a pixel interval.
type scale struct {
	d0, d1, r0, r1 float64
}

func (sc scale) at(v float64) float64 {
	if sc.d1 == sc.d0 {
		return (sc.r0 + sc.r1) / 2
	}
	return sc.r0 + (v-sc.d0)/(sc.d1-sc.d0)*(sc.r1-sc.r0)
}

// niceTicks returns about n round values covering [lo, hi], and the step.
func niceTicks(lo, hi float64, n int) ([]float64, float64) {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+step*1e-9; i++ {
		ticks = append(ticks, i*step+0) // +0 turns -0 into 0
	}
	return ticks, step
}

// niceMax rounds v up to a tick so a plot's top has a label.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	ticks, step := niceTicks(0, v, 4)
	top := ticks[len(ticks)-1]
	if top < v*(1-1e-9) { // a rate of 40.0000001 (rounding) tops out at 40
		top += step
	}
	return top
}

// siFmt prints an axis value compactly: 950, 1.2k, 20k, 3.4M.
func siFmt(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// yAxis draws horizontal grid lines with labels left of x0.
func (s *svg) yAxis(sc scale, x0, x1 float64, unit string) {
	ticks, _ := niceTicks(min(sc.d0, sc.d1), max(sc.d0, sc.d1), 4)
	for _, t := range ticks {
		y := sc.at(t)
		s.line(x0, y, x1, y, svgGrid, 1, "")
		s.text(x0-4, y+4, "end", svgFaint, siFmt(t), "")
	}
	if unit != "" {
		s.text(x0, min(sc.r0, sc.r1)-6, "start", svgFaint, unit, "")
	}
}

// xAxis draws vertical ticks and labels below y.
func (s *svg) xAxis(sc scale, y float64, unit string) {
	ticks, _ := niceTicks(sc.d0, sc.d1, 10)
	for _, t := range ticks {
		x := sc.at(t)
		s.line(x, y, x, y+4, svgInk, 1, "")
		s.text(x, y+15, "middle", svgFaint, siFmt(t), "")
	}
	if unit != "" {
		s.text(sc.r1, y+28, "end", svgFaint, unit, "")
	}
}

// barsSVG draws one horizontal bar per label, the value printed at its end.
func barsSVG(title string, labels []string, values []float64, color string) template.HTML {
	const (
		w, left, right, row, top = 360.0, 56.0, 70.0, 20.0, 22.0
	)
	h := top + row*float64(len(values)) + 6
	s := newSVG(w, h, title)
	s.text(0, 14, "start", svgInk, title, ` font-weight="bold"`)
	hi := 0.0
	for _, v := range values {
		hi = max(hi, v)
	}
	sc := scale{0, max(hi, 1e-12), left, w - right}
	for i, v := range values {
		y := top + row*float64(i)
		s.text(left-6, y+13, "end", svgInk, labels[i], "")
		s.rect(left, y+3, sc.at(max(v, 0))-left, row-6, color, "")
		s.text(sc.at(max(v, 0))+4, y+13, "start", svgInk, stats.FormatNum(v), "")
	}
	return s.html()
}

// dotPlotSVG draws each run's value of one figure, side A above side B, with
// each side's median as a tick and each of limits (a budget's bound) as a
// dashed red line across both sides.
func dotPlotSVG(title, note string, a, b []float64, medA, medB float64, limits ...float64) template.HTML {
	const w, h, left, right = 420.0, 92.0, 24.0, 16.0
	s := newSVG(w, h, title)
	s.text(0, 13, "start", svgInk, title, ` font-weight="bold"`)
	if note != "" {
		s.text(w, 13, "end", svgFaint, note, "")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range append(append([]float64{}, a...), b...) {
		lo, hi = min(lo, v), max(hi, v)
	}
	if math.IsInf(lo, 1) {
		s.text(w/2, 50, "middle", svgFaint, "no values", "")
		return s.html()
	}
	for _, l := range limits {
		if !math.IsNaN(l) && !math.IsInf(l, 0) {
			lo, hi = min(lo, l), max(hi, l)
		}
	}
	pad := (hi - lo) * 0.05
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.05, 1)
	}
	sc := scale{lo - pad, hi + pad, left, w - right}
	for i, side := range []struct {
		label string
		vals  []float64
		med   float64
		color string
	}{{"A", a, medA, svgA}, {"B", b, medB, svgB}} {
		y := 32 + float64(i)*22
		s.line(left, y, w-right, y, svgGrid, 1, "")
		s.text(left-8, y+4, "end", side.color, side.label, ` font-weight="bold"`)
		if !math.IsNaN(side.med) {
			x := sc.at(side.med)
			s.line(x, y-8, x, y+8, side.color, 2, "")
		}
		for j, v := range side.vals {
			s.circle(sc.at(v), y, 4, side.color, ` fill-opacity="0.8"`, fmt.Sprintf("%s run %d: %s", side.label, j+1, stats.FormatNum(v)))
		}
	}
	for _, l := range limits {
		if !math.IsNaN(l) && !math.IsInf(l, 0) {
			x := sc.at(l)
			s.line(x, 20, x, 62, svgRed, 1.5, ` stroke-dasharray="4 3" class="budget"`)
			s.text(x, 71, "middle", svgRed, "budget "+stats.FormatNum(l), ` font-size="9"`)
		}
	}
	ticks, _ := niceTicks(lo-pad, hi+pad, 5)
	for _, t := range ticks {
		x := sc.at(t)
		s.line(x, 74, x, 78, svgInk, 1, "")
		s.text(x, 89, "middle", svgFaint, siFmt(t), "")
	}
	return s.html()
}
