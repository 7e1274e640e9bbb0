package report

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/metrics"
)

// pollsNAPI describes a synthetic NAPI: polls per second in each context at
// time t of the timeline.
type pollsNAPI struct {
	dev, napi string
	rates     func(t float64) map[string]float64
}

// pollsThreaded is when eth0 is threaded in pollsRun: between its two writes.
func pollsThreaded(t float64) bool { return t > 2.12 && t <= 5.12 }

// pollsRun is a synthetic run of a load through eth0 whose threaded flips
// on and off, sampled by napi_polls every 200 ms: eth0's queues move from
// softirq (with some ksoftirqd) to kthread and back, vrx is threaded all
// along with a busy-poller for a second, the backlog polls a little and a
// tx NAPI never. extra NAPIs join them. It returns the result and each
// NAPI's polls per context, as counted into the snapshots.
func pollsRun(extra ...pollsNAPI) (*results.Result, map[string]map[string]uint64) {
	eth := func(scale float64) func(float64) map[string]float64 {
		return func(t float64) map[string]float64 {
			if pollsThreaded(t) {
				return map[string]float64{"kthread": 1200 * scale}
			}
			return map[string]float64{"softirq": 900 * scale, "ksoftirqd": 150 * scale}
		}
	}
	napis := append([]pollsNAPI{
		{"eth0", "rx-0", eth(1)},
		{"eth0", "rx-1", eth(0.6)},
		{"vrx", "rx-0", func(t float64) map[string]float64 {
			if t > 3 && t <= 4 {
				return map[string]float64{"kthread": 300, "busypoll": 2000}
			}
			return map[string]float64{"kthread": 800}
		}},
		{"backlog", "backlog", func(float64) map[string]float64 { return map[string]float64{"softirq": 40} }},
		{"eth0", "tx@3a4c40", func(float64) map[string]float64 { return map[string]float64{"softirq": 0} }},
	}, extra...)
	cum := map[string]map[string]uint64{}
	var snaps []metrics.PollSnapshot
	for i := 0; i <= 37; i++ {
		t := 0.2 * float64(i)
		var text strings.Builder
		for _, n := range napis {
			name := n.dev + "/" + n.napi
			if cum[name] == nil {
				cum[name] = map[string]uint64{}
			}
			for ctx, rate := range n.rates(t) {
				if i > 0 {
					cum[name][ctx] += uint64(math.Round(rate * 0.2))
				}
			}
			for ctx, polls := range cum[name] {
				fmt.Fprintf(&text, "%s %s %s 0 0 %d %d\n", n.dev, n.napi, ctx, polls, polls*8)
			}
		}
		snaps = append(snaps, metrics.PollSnapshot{T: t, Text: text.String()})
	}
	r := &results.Result{Scenario: "threaded-flip-under-load", Verdict: results.Pass, Kernel: results.Kernel{Spec: "stock-6.12", Release: "6.12.60"},
		Accel: "tcg", Timings: results.Timings{Boot: 1.8, Timeline: 7.3, Total: 9.4},
		Steps: []results.Step{
			{Name: "start nic-udp", Line: 20, Start: 0, Duration: 0.1, Iterations: 1},
			{Name: "sleep 2s", Line: 21, Start: 0.1, Duration: 2, Iterations: 1},
			{Name: "write 1 > /sys/class/net/eth0/threaded", Line: 22, Start: 2.1, Duration: 0.02, Iterations: 1},
			{Name: "sleep 3s", Line: 23, Start: 2.12, Duration: 3, Iterations: 1},
			{Name: "write 0 > /sys/class/net/eth0/threaded", Line: 24, Start: 5.12, Duration: 0.02, Iterations: 1},
			{Name: "sleep 2s", Line: 25, Start: 5.14, Duration: 2, Iterations: 1},
			{Name: "stop nic-udp", Line: 26, Start: 7.14, Duration: 0.16, Iterations: 1},
		},
		Loads: []results.Load{{Name: "nic-udp", Sent: 61000, Received: 60800, PerSecond: []uint64{8400, 8700, 8600, 8800, 8500, 8700, 8600, 500}}},
		Polls: metrics.PollRates(snaps),
	}
	return r, cum
}

func TestHTMLPolls(t *testing.T) {
	evil := pollsNAPI{"eth1", `<script>alert("x")</script>`, func(float64) map[string]float64 { return map[string]float64{"busypoll": 10} }}
	r, counted := pollsRun(evil)
	page, n := reportHTML(t, r, nil)
	reportContains(t, page, "<h2>Timeline</h2>", "<h2>Who polled each NAPI",
		`aria-label="eth0/rx-0: polls per second by context"`, `<tspan font-weight="bold">eth0/rx-0</tspan>`,
		">softirq</text>", ">ksoftirqd</text>", ">kthread</text>", ">busypoll</text>", // legends
		`<th>vrx/rx-0</th>`, `<span class="sw" style="background:#f28e2b"></span>kthread</td>`, // tables
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") // the hostile NAPI, escaped
	if strings.Contains(page, "<script") || n["script"] != 0 {
		t.Errorf("unescaped NAPI name in the page")
	}
	if strings.Contains(page, "tx@3a4c40") {
		t.Errorf("a NAPI that never polled is shown")
	}
	// One area per context that polled: eth0's queues 3 each, vrx 2, backlog 1, eth1 1.
	if n["polygon"] != 3+3+2+1+1 {
		t.Errorf("%d areas, want 10", n["polygon"])
	}
	// The section comes after the timeline, its plots and tables interleaved by NAPI name.
	order := []string{"<h2>Timeline</h2>", "<h2>Who polled", "<th>backlog/backlog</th>", "<th>eth0/rx-0</th>", "<th>eth0/rx-1</th>", "<th>vrx/rx-0</th>"}
	for i := 1; i < len(order); i++ {
		if strings.Index(page, order[i-1]) > strings.Index(page, order[i]) {
			t.Errorf("%q after %q", order[i-1], order[i])
		}
	}
	// The totals are the polls counted into the snapshots, per context and all.
	rows := regexp.MustCompile(`</span>(\w+)</td><td class="num">(\d+)</td><td class="num">(\d+)</td>`)
	tables, checked := strings.Split(page, `<div class="napi">`)[1:], 0
	for _, tab := range tables {
		name := strings.TrimPrefix(regexp.MustCompile(`<th>[^<]*</th>`).FindString(tab), "<th>")
		name = strings.ReplaceAll(strings.ReplaceAll(strings.TrimSuffix(name, "</th>"), "&lt;", "<"), "&gt;", ">")
		name = strings.ReplaceAll(name, "&#34;", `"`)
		for _, m := range rows.FindAllStringSubmatch(tab, -1) {
			want := counted[name][m[1]]
			if m[2] != fmt.Sprint(want) || m[3] != fmt.Sprint(8*want) {
				t.Errorf("%s %s: %s polls, %s packets; want %d, %d", name, m[1], m[2], m[3], want, 8*want)
			}
			checked++
		}
	}
	if len(tables) != 5 || checked != 10 {
		t.Errorf("%d tables with %d context rows, want 5 and 10", len(tables), checked)
	}
	reportContains(t, page, `<tr><td>all</td><td class="num">`+fmt.Sprint(counted["eth0/rx-0"]["softirq"]+counted["eth0/rx-0"]["ksoftirqd"]+counted["eth0/rx-0"]["kthread"])+`</td>`)
}

// TestPollsMove checks what a reader must see: eth0's polling moves from
// softirq to kthread while threaded and back after.
func TestPollsMove(t *testing.T) {
	r, _ := pollsRun()
	tl := newTimeline(r, nil)
	starts := pollStarts(r.Polls)
	for _, n := range groupPolls(r.Polls, starts) {
		if n.name != "eth0/rx-0" {
			continue
		}
		_, mids, rates := n.pollBuckets(starts, tl.end)
		for i, x := range mids {
			soft, kth := math.Round(rates["softirq"][i]), math.Round(rates["kthread"][i])
			if x < 2 || x > 5.4 {
				if soft != 900 || kth != 0 {
					t.Errorf("at %.1fs softirq %g, kthread %g polls/s; want 900, 0 (not threaded)", x, soft, kth)
				}
			} else if x > 2.4 && x < 5 && (soft != 0 || kth != 1200) {
				t.Errorf("at %.1fs softirq %g, kthread %g polls/s; want 0, 1200 (threaded)", x, soft, kth)
			}
		}
		return
	}
	t.Fatal("no eth0/rx-0")
}

// TestPollsLarge checks that a large run stays small: 20 NAPIs in 4
// contexts for 1000 intervals draw at most pollMaxPoints points per area,
// and the averaging keeps each context's polls.
func TestPollsLarge(t *testing.T) {
	var ps []results.PollSeries
	for q := range 20 {
		for c, ctx := range pollStack {
			p := results.PollSeries{NAPI: fmt.Sprintf("eth0/rx-%d", q), Context: ctx}
			for i := range 1000 {
				p.T = append(p.T, 0.2*float64(i+1))
				p.Rate = append(p.Rate, float64((i*7+q*13+c*31)%500))
				p.Packets = append(p.Packets, 0)
			}
			ps = append(ps, p)
		}
	}
	r := &results.Result{Timings: results.Timings{Timeline: 200}, Steps: []results.Step{{Name: "sleep 200s", Duration: 200}}, Polls: ps}
	page, n := reportHTML(t, r, nil)
	if n["polygon"] != 80 {
		t.Errorf("%d areas, want 80", n["polygon"])
	}
	for _, m := range regexp.MustCompile(`<polygon points="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if pts := strings.Count(m[1], " ") + 1; pts > pollMaxPoints+4 {
			t.Fatalf("an area of %d points, want at most %d", pts, pollMaxPoints+4)
		}
	}
	if len(page) > 1<<20 {
		t.Errorf("page of %d bytes for 80 series of 1000 points, want at most 1 MiB", len(page))
	}
	starts := pollStarts(ps)
	tl := newTimeline(r, nil)
	for _, np := range groupPolls(ps, starts)[:2] {
		span, mids, rates := np.pollBuckets(starts, tl.end)
		if len(mids) != 334 { // 1000 intervals in runs of 3
			t.Errorf("%d points, want 334", len(mids))
		}
		for _, ctx := range np.ctxs {
			sum := 0.0
			for i := range mids {
				d := 0.6
				if i == len(mids)-1 {
					d = span[1] - 0.6*float64(i)
				}
				sum += rates[ctx][i] * d
			}
			if math.Abs(sum-np.polls[ctx]) > 1e-6*np.polls[ctx] {
				t.Errorf("%s %s: %g polls averaged, %g counted", np.name, ctx, sum, np.polls[ctx])
			}
		}
	}
}

func TestHTMLNoPolls(t *testing.T) {
	r, _ := pollsRun()
	for i := range r.Polls {
		clear(r.Polls[i].Rate)
	}
	page, _ := reportHTML(t, r, nil)
	if strings.Contains(page, "Who polled") {
		t.Errorf("a polls section without polls")
	}
}

// TestExpectedStrip: a NAPI whose device a knob touched gets the model's
// expected state under its plot; one no knob touched gets none.
func TestExpectedStrip(t *testing.T) {
	r, _ := pollsRun()
	r.Knobs = []results.Knob{{Step: "flip", Line: 3, Start: 1, Done: 1.1, Dev: "vrx", Kind: results.KnobThreaded, Value: "1"},
		{Step: "flip", Line: 3, Start: 2, Done: 2.1, Dev: "vrx", Kind: results.KnobThreaded, Value: "0"}}
	page, _ := reportHTML(t, r, nil)
	reportContains(t, page, "expected threaded: no softirq poll, 1.10-2.00s", "changing to softirq mode: no kthread poll, 2.00-2.10s")
	for _, tab := range strings.Split(page, `<div class="napi">`)[1:] {
		if has := strings.Contains(tab, ">expected</text>"); has != strings.Contains(tab, "vrx/rx-0") {
			t.Errorf("expected strip shown %v in a NAPI's table:\n%.300s", has, tab)
		}
	}
}
