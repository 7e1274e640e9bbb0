package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/stats"
)

// timeline is a run laid out on one time axis, seconds since the timeline
// began: each load's delivered packets per second, NET_RX softirqs per
// second per CPU from the samples, the steps in lanes, the splats.
type timeline struct {
	end    float64
	loads  []series
	netRX  []series
	steps  []laneStep
	lanes  int
	splats []splatMark
	// windows are the windowed assertions' spans, one row each.
	windows []results.Assert
	knobs   []results.Knob // what the model replays into each NAPI's expected state
}

// series is one line of a plot.
type series struct {
	name    string
	xs, ys  []float64
	tips    []string
	partial bool // the last point covers less than its interval (a load stopped within its last second)
}

// laneStep is a step and the lane of the steps strip it is drawn in.
type laneStep struct {
	results.Step
	lane int
}

// splatMark is a splat placed on the time axis.
type splatMark struct {
	n     int // 1-based number among the run's splats
	x     float64
	title string
}

// newTimeline lays out r; samples give the NET_RX rates and place splats
// printed outside any step (guest uptime -> timeline time).
func newTimeline(r *results.Result, samples []results.SampleLine) *timeline {
	t := &timeline{end: r.Timings.Timeline, knobs: r.Knobs}
	for _, st := range r.Steps {
		t.end = max(t.end, st.Start+st.Duration)
	}
	for _, l := range r.Loads {
		if len(l.PerSecond) == 0 {
			continue
		}
		start := loadStep(r.Steps, "start ", l.Name, 0)
		stop := loadStep(r.Steps, "stop ", l.Name, math.Inf(1))
		s := series{name: l.Name}
		for i, v := range l.PerSecond {
			s.xs = append(s.xs, start+float64(i)+0.5)
			s.ys = append(s.ys, float64(v))
			s.tips = append(s.tips, fmt.Sprintf("%s, second %d of the load (+%.1fs): %d packets", l.Name, i+1, start+float64(i), v))
		}
		if last := start + float64(len(l.PerSecond)); stop < last-0.05 {
			s.partial = true
			s.tips[len(s.tips)-1] += fmt.Sprintf(" (partial: the load stopped at +%.1fs)", stop)
		}
		t.end = max(t.end, start+float64(len(l.PerSecond)))
		t.loads = append(t.loads, s)
	}
	t.netRX = netRXRates(samples)
	t.fitPolls(r.Polls)
	t.placeSteps(r.Steps)
	t.placeSplats(r, samples)
	for _, a := range r.Asserts {
		if len(a.Spans) > 0 && len(t.windows) < maxWindowRows {
			t.windows = append(t.windows, a)
		}
	}
	return t
}

// maxWindowRows bounds the assertion-window rows under the steps strip.
const maxWindowRows = 8

// drawWindows draws one row per windowed assertion: its measured spans,
// green when it held, red when it failed, with the measured value as a tip.
func (t *timeline) drawWindows(s *svg, x scale, top float64) {
	for i, a := range t.windows {
		y := top + float64(i)*tlLane
		color := "#2e7d32"
		if !a.Passed {
			color = svgRed
		}
		for _, sp := range a.Spans {
			fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" opacity="0.6">`,
				svgN(x.at(sp[0])), svgN(y+3), svgN(max(x.at(sp[1])-x.at(sp[0]), 2)), svgN(tlLane-6), color)
			s.title(fmt.Sprintf("%s: %s (%s)", a.Name, a.Measured, a.Window))
			s.b.WriteString("</rect>")
		}
		s.text(tlLeft-4, y+tlLane-6, "end", color, svgClip(a.Name, 18), "")
	}
}

// fitPolls stretches the axis to the napi_polls samples taken shortly after
// the timeline (the closing metrics snapshot); later ones stay off the plots.
func (t *timeline) fitPolls(polls []results.PollSeries) {
	limit := t.end*1.05 + 0.5
	if t.end == 0 { // no steps nor loads: the samples are the axis
		limit = math.Inf(1)
	}
	for _, p := range polls {
		for _, x := range p.T {
			if x <= limit {
				t.end = max(t.end, x)
			}
		}
	}
}

// loadStep is when the step "<verb> a, b" naming the load began, or else.
func loadStep(steps []results.Step, verb, load string, or float64) float64 {
	for _, st := range steps {
		names, ok := strings.CutPrefix(st.Name, verb)
		if ok && slices.Contains(strings.Split(names, ", "), load) {
			return st.Start
		}
	}
	return or
}

// placeSteps puts each step in the first lane free at its start.
func (t *timeline) placeSteps(steps []results.Step) {
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b results.Step) int { return cmp.Compare(a.Start, b.Start) })
	var laneEnd []float64
	for _, st := range sorted {
		lane := slices.IndexFunc(laneEnd, func(end float64) bool { return end <= st.Start+1e-6 })
		if lane < 0 {
			lane = len(laneEnd)
			laneEnd = append(laneEnd, 0)
		}
		laneEnd[lane] = st.Start + st.Duration
		t.steps = append(t.steps, laneStep{st, lane})
	}
	t.lanes = len(laneEnd)
}

// placeSplats finds each splat's time: its step's start plus its offset, or
// its printk time moved onto the timeline by the first sample's clocks.
func (t *timeline) placeSplats(r *results.Result, samples []results.SampleLine) {
	for i, sp := range r.Splats {
		m := splatMark{n: i + 1, title: sp.Title, x: math.NaN()}
		if st, ok := splatStep(r.Steps, sp); ok {
			m.x = st.Start + sp.Offset
		} else if len(samples) > 0 && sp.Time >= 0 {
			m.x = sp.Time + samples[0].Host - samples[0].Sample.T
		}
		if m.x >= 0 && m.x <= t.end*1.05+0.5 {
			t.end = max(t.end, m.x)
			t.splats = append(t.splats, m)
		}
	}
}

// splatStep returns the step a splat was printed in: of the steps with its
// name, the first whose span holds the offset.
func splatStep(steps []results.Step, sp results.Splat) (results.Step, bool) {
	var found []results.Step
	for _, st := range steps {
		if sp.Step != "" && st.Name == sp.Step {
			found = append(found, st)
		}
	}
	for _, st := range found {
		if sp.Offset <= st.Duration+0.05 {
			return st, true
		}
	}
	if len(found) > 0 {
		return found[0], true
	}
	return results.Step{}, false
}

// netRXRates returns NET_RX softirqs per second on each CPU between
// consecutive snapshots that read /proc/softirqs; nil with fewer than 3.
func netRXRates(samples []results.SampleLine) []series {
	type snap struct {
		host, t float64
		rx      []float64
	}
	var snaps []snap
	for _, s := range samples {
		text, ok := s.Sample.Values[wire.SourceSoftirqs]
		if !ok {
			continue
		}
		se, err := metrics.ParseSource(wire.SourceSoftirqs, text)
		if err != nil || len(se["NET_RX"]) == 0 {
			continue
		}
		snaps = append(snaps, snap{s.Host, s.Sample.T, se["NET_RX"]})
	}
	slices.SortStableFunc(snaps, func(a, b snap) int { return cmp.Compare(a.t, b.t) })
	if len(snaps) < 3 {
		return nil
	}
	out := make([]series, len(snaps[0].rx))
	for c := range out {
		out[c].name = fmt.Sprintf("cpu%d", c)
	}
	for i := 1; i < len(snaps); i++ {
		a, b := snaps[i-1], snaps[i]
		dt := b.t - a.t
		if dt <= 0 || len(a.rx) != len(out) || len(b.rx) != len(out) {
			continue
		}
		x := (a.host + b.host) / 2
		for c := range out {
			v := (b.rx[c] - a.rx[c]) / dt
			out[c].xs = append(out[c].xs, x)
			out[c].ys = append(out[c].ys, v)
			out[c].tips = append(out[c].tips, fmt.Sprintf("cpu%d at +%.1fs: %s NET_RX/s", c, x, stats.FormatNum(v)))
		}
	}
	return out
}

// Layout of the timeline figure, in pixels.
const (
	tlWidth  = 1100.0
	tlLeft   = 70.0
	tlRight  = 24.0
	tlTop    = 48.0 // room for splat labels and the first unit
	tlPlot   = 190.0
	tlRXPlot = 140.0
	tlGap    = 26.0
	tlLane   = 17.0
)

// svg draws the timeline figure: the plots, the steps strip and the time axis.
func (t *timeline) svg() template.HTML {
	top := tlTop
	if len(t.loads)+len(t.netRX) == 0 {
		top = 30 // splat labels only
	}
	h := top
	if len(t.loads) > 0 {
		h += tlPlot + tlGap
	}
	if len(t.netRX) > 0 {
		h += tlRXPlot + tlGap
	}
	h += float64(t.lanes+len(t.windows))*tlLane + 40
	s := newSVG(tlWidth, h, "timeline: loads, NET_RX rates, steps and splats")
	x := scale{0, max(t.end, 0.001), tlLeft, tlWidth - tlRight}
	y := top
	if len(t.loads) > 0 {
		t.plot(s, x, y, tlPlot, t.loads, "received packets/s", 0)
		y += tlPlot + tlGap
	}
	if len(t.netRX) > 0 {
		t.plot(s, x, y, tlRXPlot, t.netRX, "NET_RX softirqs/s per CPU", len(t.loads))
		y += tlRXPlot + tlGap
	}
	t.drawSteps(s, x, y)
	y += float64(t.lanes) * tlLane
	t.drawWindows(s, x, y)
	y += float64(len(t.windows)) * tlLane
	s.line(tlLeft, y+2, tlWidth-tlRight, y+2, svgInk, 1, "")
	s.xAxis(x, y+2, "seconds since the timeline began")
	for i, m := range t.splats {
		px := x.at(m.x)
		splatMarker(s, px, top-6, y+2)
		label, lx, anchor := fmt.Sprintf("S%d %s", m.n, m.title), px+3, "start"
		if px > tlWidth*0.6 {
			lx, anchor = px-3, "end"
		}
		s.text(lx, 12+float64(i%2)*12, anchor, svgRed, label, ` font-weight="bold"`)
	}
	return s.html()
}

// stepBands shades alternate steps of the first lane behind a panel of the
// plot area x.r0 to x.r1, top to top+height.
func (t *timeline) stepBands(s *svg, x scale, top, height float64) {
	k := 0
	for _, st := range t.steps {
		if st.lane != 0 {
			continue
		}
		if k%2 == 0 {
			s.rect(x.at(st.Start), top, x.at(st.Start+st.Duration)-x.at(st.Start), height, "#eef1f8", "")
		}
		k++
	}
}

// splatMarker marks a splat at px from y0 down to y1.
func splatMarker(s *svg, px, y0, y1 float64) {
	s.line(px, y0, px, y1, svgRed, 1.5, ` stroke-dasharray="4 2"`)
}

// plot draws one panel of lines with shaded spans for the first lane's steps.
func (t *timeline) plot(s *svg, x scale, top, height float64, lines []series, unit string, color0 int) {
	t.stepBands(s, x, top, height)
	hi := 0.0
	for _, l := range lines {
		for _, v := range l.ys {
			hi = max(hi, v)
		}
	}
	y := scale{0, niceMax(hi), top + height, top}
	s.yAxis(y, tlLeft, tlWidth-tlRight, unit)
	s.line(tlLeft, top+height, tlWidth-tlRight, top+height, svgInk, 1, "")
	lx := tlLeft + 8
	for i, l := range lines {
		color := svgPalette[(color0+i)%len(svgPalette)]
		px, py := make([]float64, len(l.xs)), make([]float64, len(l.ys))
		for j := range l.xs {
			px[j], py[j] = x.at(l.xs[j]), y.at(l.ys[j])
		}
		full := len(px)
		if l.partial && full > 1 {
			full--
			s.line(px[full-1], py[full-1], px[full], py[full], color, 1.5, ` stroke-dasharray="3 3"`)
		}
		s.polyline(px[:full], py[:full], color, 2)
		for j := range px {
			if j < full {
				s.circle(px[j], py[j], 2.5, color, "", l.tips[j])
			} else {
				s.circle(px[j], py[j], 3, "#ffffff", ` stroke="`+color+`" stroke-width="1.5"`, l.tips[j])
			}
		}
		s.rect(lx, top+6, 12, 4, color, "")
		s.text(lx+16, top+12, "start", svgInk, l.name, "")
		lx += 16 + 7*float64(len(l.name)) + 18
	}
}

// drawSteps draws the steps strip under a plot area ending at x.r1: one bar
// per step in its lane, labelled as far as the lane leaves room; a step that
// failed is red.
func (t *timeline) drawSteps(s *svg, x scale, top float64) {
	for i, st := range t.steps {
		x0, x1 := x.at(st.Start), x.at(st.Start+st.Duration)
		room := x.r1 - x0
		for _, o := range t.steps[i+1:] {
			if o.lane == st.lane {
				room = x.at(o.Start) - x0
				break
			}
		}
		y := top + float64(st.lane)*tlLane
		fill := "#c9d6ea"
		if st.Error != "" {
			fill = "#f4a6a6"
		}
		tip := fmt.Sprintf("%s (line %d): +%.3fs for %.3fs, %d iterations", st.Name, st.Line, st.Start, st.Duration, st.Iterations)
		if st.Error != "" {
			tip += "; error: " + st.Error
		}
		fmt.Fprintf(&s.b, "<g>")
		s.title(tip)
		s.rect(x0, y+2, max(x1-x0, 1.5), tlLane-4, fill, ` stroke="#8aa2c8" stroke-width="0.5"`)
		if chars := int((room - 4) / 6.2); chars >= 3 {
			s.text(x0+3, y+tlLane-5, "start", svgInk, svgClip(st.Name, chars), ` font-size="10"`)
		}
		s.b.WriteString("</g>")
	}
}

// svgClip shortens s to n characters with an ellipsis.
func svgClip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 1)]) + "…"
}

// HasLoads tells whether the figure plots loads.
func (t *timeline) HasLoads() bool { return len(t.loads) > 0 }

// HasNetRX tells whether the figure plots NET_RX rates.
func (t *timeline) HasNetRX() bool { return len(t.netRX) > 0 }

// HasSplats tells whether the figure marks splats.
func (t *timeline) HasSplats() bool { return len(t.splats) > 0 }
