package report

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"

	"napilab/results"
	"napilab/results/model"
	"napilab/results/stats"
)

// The "who polled each NAPI" section of the run page: for every NAPI that
// was polled, its polls per second stacked by the context that ran them, on
// the timeline's time axis with its steps, and the totals per context.

// pollStack is the stacking order of the poll contexts, bottom up; they add
// up to all polls (softirq excludes ksoftirqd in PollSeries).
var pollStack = []string{"softirq", "ksoftirqd", "kthread", "busypoll"}

// pollColors are the contexts' fixed colours: softirq blue, ksoftirqd a
// lighter blue (softirq work deferred to the thread), kthread orange,
// busypoll green. Other contexts are pollOther.
var pollColors = map[string]string{"softirq": "#4e79a7", "ksoftirqd": "#a0cbe8", "kthread": "#f28e2b", "busypoll": "#59a14f"}

const pollOther = "#bab0ac"

// pollMaxPoints caps the points of one area: longer series are averaged
// over runs of consecutive intervals, which keeps the area (the polls).
const pollMaxPoints = 400

// Layout of a NAPI's plot, in pixels; the steps strip uses tlLane.
const (
	pollWidth  = 700.0
	pollLeft   = 52.0
	pollRight  = 14.0
	pollTop    = 24.0
	pollHeight = 84.0
)

// napiPollsView is one NAPI of the section: its plot and its totals.
type napiPollsView struct {
	NAPI string
	Plot template.HTML
	Rows []pollRow // one per context that polled, then "all"
}

// pollRow is one line of a NAPI's totals table.
type pollRow struct {
	Context                 string
	Color                   template.CSS // the context's colour; "" for the sum
	Polls, Packets, PerPoll string
}

// napiPolls is one NAPI's rates by context on the NAPI's interval ends.
type napiPolls struct {
	name           string
	ctxs           []string             // contexts that polled, in stacking order
	ends           []float64            // interval ends, ascending
	rate, pkts     map[string][]float64 // per context, aligned with ends (0 where missing)
	polls, packets map[string]float64   // per context, over all intervals
}

// pollStarts maps each interval end of any series to its start: the
// previous end of any series (all come from the same snapshots). The first
// interval is taken to be as long as the second.
func pollStarts(ps []results.PollSeries) map[float64]float64 {
	var ends []float64
	for _, p := range ps {
		ends = append(ends, p.T...)
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	starts := make(map[float64]float64, len(ends))
	for i, e := range ends {
		switch {
		case i > 0:
			starts[e] = ends[i-1]
		case len(ends) > 1:
			starts[e] = e - (ends[1] - e)
		default:
			starts[e] = min(0, e-1)
		}
	}
	return starts
}

// groupPolls gathers the series by NAPI, sorted by name, and drops the
// contexts and the NAPIs that never polled.
func groupPolls(ps []results.PollSeries, starts map[float64]float64) []*napiPolls {
	byName := map[string][]results.PollSeries{}
	for _, p := range ps {
		byName[p.NAPI] = append(byName[p.NAPI], p)
	}
	var out []*napiPolls
	for _, name := range repKeys(byName) {
		n := &napiPolls{name: name, rate: map[string][]float64{}, pkts: map[string][]float64{},
			polls: map[string]float64{}, packets: map[string]float64{}}
		for _, p := range byName[name] {
			n.ends = append(n.ends, p.T...)
		}
		slices.Sort(n.ends)
		n.ends = slices.Compact(n.ends)
		for _, p := range byName[name] {
			if n.rate[p.Context] == nil {
				n.rate[p.Context] = make([]float64, len(n.ends))
				n.pkts[p.Context] = make([]float64, len(n.ends))
			}
			for i, t := range p.T {
				if i >= len(p.Rate) || i >= len(p.Packets) {
					break
				}
				j, _ := slices.BinarySearch(n.ends, t)
				dt := t - starts[t]
				n.rate[p.Context][j] += p.Rate[i]
				n.pkts[p.Context][j] += p.Packets[i]
				n.polls[p.Context] += p.Rate[i] * dt
				n.packets[p.Context] += p.Packets[i] * dt
			}
		}
		for ctx := range n.rate {
			if math.Round(n.polls[ctx]) > 0 {
				n.ctxs = append(n.ctxs, ctx)
			}
		}
		if len(n.ctxs) == 0 {
			continue
		}
		slices.SortFunc(n.ctxs, func(a, b string) int { return cmp.Or(cmp.Compare(pollRank(a), pollRank(b)), cmp.Compare(a, b)) })
		out = append(out, n)
	}
	return out
}

func pollRank(ctx string) int {
	if i := slices.Index(pollStack, ctx); i >= 0 {
		return i
	}
	return len(pollStack)
}

func pollColor(ctx string) string {
	if c, ok := pollColors[ctx]; ok {
		return c
	}
	return pollOther
}

// pollBuckets averages the intervals ending within [0, end] over runs of
// consecutive intervals, at most pollMaxPoints runs: the runs' spans, their
// middles, and each context's mean polls per second over each run.
func (n *napiPolls) pollBuckets(starts map[float64]float64, end float64) (span [2]float64, mids []float64, rates map[string][]float64) {
	var idx []int
	for i, e := range n.ends {
		if e >= 0 && e <= end {
			idx = append(idx, i)
		}
	}
	rates = map[string][]float64{}
	if len(idx) == 0 {
		return span, nil, rates
	}
	k := (len(idx) + pollMaxPoints - 1) / pollMaxPoints
	span = [2]float64{max(starts[n.ends[idx[0]]], 0), n.ends[idx[len(idx)-1]]}
	for b := 0; b < len(idx); b += k {
		run := idx[b:min(b+k, len(idx))]
		s0, s1 := max(starts[n.ends[run[0]]], 0), n.ends[run[len(run)-1]]
		mids = append(mids, (s0+s1)/2)
		dts := 0.0
		for _, i := range run {
			dts += n.ends[i] - starts[n.ends[i]]
		}
		for _, ctx := range n.ctxs {
			sum := 0.0
			for _, i := range run {
				sum += n.rate[ctx][i] * (n.ends[i] - starts[n.ends[i]])
			}
			rates[ctx] = append(rates[ctx], sum/max(dts, 1e-9))
		}
	}
	return span, mids, rates
}

// pollsSVG draws one NAPI's polls per second, stacked by context, over the
// timeline's steps (shaded in the plot, as bars below it) and splats.
func (t *timeline) pollsSVG(n *napiPolls, starts map[float64]float64) template.HTML {
	segs := t.expected(n.name)
	strip := 0.0
	if len(segs) > 0 {
		strip = expectedHeight + 3
	}
	h := pollTop + pollHeight + 4 + strip + float64(t.lanes)*tlLane + 22
	s := newSVG(pollWidth, h, n.name+": polls per second by context")
	fmt.Fprintf(&s.b, `<text x="0" y="13" fill="%s"><tspan font-weight="bold">%s</tspan><tspan fill="%s"> polls/s</tspan></text>`,
		svgInk, html.EscapeString(n.name), svgFaint)
	lx := pollWidth - pollRight
	for _, ctx := range slices.Backward(n.ctxs) {
		lx -= 7*float64(len(ctx)) + 16
		s.rect(lx, 5, 12, 8, pollColor(ctx), "")
		s.text(lx+15, 13, "start", svgInk, ctx, "")
		lx -= 12
	}

	x := scale{0, max(t.end, 0.001), pollLeft, pollWidth - pollRight}
	span, mids, rates := n.pollBuckets(starts, t.end)
	stacks := make([][]float64, len(n.ctxs)) // stacks[i]: the contexts up to i summed
	hi := 0.0
	for i, ctx := range n.ctxs {
		stacks[i] = slices.Clone(rates[ctx])
		if i > 0 {
			for j := range stacks[i] {
				stacks[i][j] += stacks[i-1][j]
			}
		}
	}
	if len(stacks) > 0 {
		for _, v := range stacks[len(stacks)-1] {
			hi = max(hi, v)
		}
	}
	y := scale{0, niceMax(hi), pollTop + pollHeight, pollTop}
	t.stepBands(s, x, pollTop, pollHeight)
	s.yAxis(y, pollLeft, pollWidth-pollRight, "")
	if len(mids) > 0 {
		// Back to front: each context's area reaches down to the axis and
		// the ones below it are drawn over it.
		for i := len(n.ctxs) - 1; i >= 0; i-- {
			ctx, st := n.ctxs[i], stacks[i]
			px := append(append([]float64{x.at(span[0])}, mids...), x.at(span[1]))
			for j := 1; j < len(px)-1; j++ {
				px[j] = x.at(px[j])
			}
			py := append(append([]float64{st[0]}, st...), st[len(st)-1])
			for j := range py {
				py[j] = y.at(py[j])
			}
			tip := fmt.Sprintf("%s %s: %s polls, %s packets", n.name, ctx, stats.FormatNum(math.Round(n.polls[ctx])), stats.FormatNum(math.Round(n.packets[ctx])))
			s.area(px, py, y.at(0), pollColor(ctx), tip)
		}
	}
	s.line(pollLeft, pollTop+pollHeight, pollWidth-pollRight, pollTop+pollHeight, svgInk, 1, "")
	bottom := pollTop + pollHeight + 4
	if len(segs) > 0 {
		drawExpected(s, x, bottom, segs)
		bottom += strip
	}
	t.drawSteps(s, x, bottom)
	bottom += float64(t.lanes) * tlLane
	for _, m := range t.splats {
		splatMarker(s, x.at(m.x), pollTop, bottom+2)
	}
	s.line(pollLeft, bottom+2, pollWidth-pollRight, bottom+2, svgInk, 1, "")
	s.xAxis(x, bottom+2, "")
	return s.html()
}

// pollViews lays out the section: a plot and a totals table per NAPI that
// was polled, on the axis of t.
func (t *timeline) pollViews(ps []results.PollSeries) []napiPollsView {
	starts := pollStarts(ps)
	var out []napiPollsView
	for _, n := range groupPolls(ps, starts) {
		v := napiPollsView{NAPI: n.name, Plot: t.pollsSVG(n, starts)}
		var polls, pkts float64
		for _, ctx := range n.ctxs {
			v.Rows = append(v.Rows, newPollRow(ctx, pollColor(ctx), n.polls[ctx], n.packets[ctx]))
			polls += n.polls[ctx]
			pkts += n.packets[ctx]
		}
		v.Rows = append(v.Rows, newPollRow("all", "", polls, pkts))
		out = append(out, v)
	}
	return out
}

func newPollRow(ctx, color string, polls, pkts float64) pollRow {
	polls, pkts = math.Round(polls), math.Round(pkts)
	per := "-"
	if polls > 0 {
		per = stats.FormatNum(pkts / polls)
	}
	return pollRow{Context: ctx, Color: template.CSS(color), Polls: stats.FormatNum(polls), Packets: stats.FormatNum(pkts), PerPoll: per} // color is one of ours
}

// expectedHeight is the height of the strip under a NAPI's plot that shows
// the state the model expected it in (results/model).
const expectedHeight = 7.0

// expected returns the model's segments for a NAPI named "dev/napi", or
// none when no knob touched its device or none set a known state.
func (t *timeline) expected(name string) []model.Segment {
	i := strings.LastIndex(name, "/")
	if i < 0 || len(t.knobs) == 0 {
		return nil
	}
	segs := model.Segments(t.knobs, model.NAPI{Dev: name[:i], Name: name[i+1:]}, t.end)
	for _, sg := range segs {
		if sg.State.Down || sg.State.Mode != model.ModeUnknown {
			return segs
		}
	}
	return nil
}

// drawExpected draws the expected state as a strip: the kthread's colour
// while threaded, softirq's while in softirq mode, grey while down, faint
// while a change is under way, nothing while unknown.
func drawExpected(s *svg, x scale, y float64, segs []model.Segment) {
	s.text(pollLeft-4, y+expectedHeight-1, "end", svgFaint, "expected", ` font-size="9"`)
	for _, sg := range segs {
		fill, what := "", ""
		switch {
		case sg.State.Down:
			fill, what = svgFaint, "down: no poll"
		case sg.State.Mode == model.ModeSoftirq:
			fill, what = pollColor("softirq"), "softirq mode: no kthread poll"
		case sg.State.Mode == model.ModeThreaded || sg.State.Mode == model.ModeBusyPoll:
			fill, what = pollColor("kthread"), sg.State.Mode.String()+": no softirq poll"
		default:
			continue
		}
		extra := ""
		if sg.Changing {
			extra, what = ` opacity="0.35"`, "changing to "+what
		}
		fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s>`, svgN(x.at(sg.From)), svgN(y),
			svgN(max(x.at(sg.To)-x.at(sg.From), 0.5)), svgN(expectedHeight), fill, extra)
		s.title(fmt.Sprintf("expected %s, %.2f-%.2fs", what, sg.From, sg.To))
		s.b.WriteString("</rect>")
	}
}
