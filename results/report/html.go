package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/stats"
)

// WriteHTML writes a run as one self-contained page for a browser, offline:
// inline CSS and SVG, no scripts. It shows the verdict, the kernel and the
// timings, the assertions, a timeline figure (every load's delivered packets
// per second, NET_RX softirqs per CPU from samples, the steps, the splats as
// red lines), who polled each NAPI (polls/s by context on the same axis, with
// totals), per-CPU bars of the figures, the hang evidence, the splat
// reports, the loads, the devices, the QEMU command line and the console
// tail. samples may be nil.
//
//	r, samples, err := results.LoadRun(dir)
//	err = report.WriteHTML(w, r, samples)
func WriteHTML(w io.Writer, r *results.Result, samples []results.SampleLine) error {
	return runPage.Execute(w, newRunView(r, samples))
}

// runView is what the run page template shows.
type runView struct {
	R        *results.Result
	Title    string
	Started  string
	Params   []string
	Passed   int
	Timeline template.HTML
	HasPlot  bool
	Plot     *timeline
	Polls    []napiPollsView
	Bars     []template.HTML
	Splats   []splatView
	Loads    []loadView
	Figures  [][2]string
	Devices  []deviceSnapshot
}

type splatView struct {
	N     int
	S     results.Splat
	Where string
}

type loadView struct {
	L       results.Load
	Loss    string
	Rate    string
	Latency string
}

type deviceSnapshot struct {
	When    string
	Devices []wire.Device
}

func newRunView(r *results.Result, samples []results.SampleLine) *runView {
	v := &runView{R: r, Title: fmt.Sprintf("%s %s on %s", r.Verdict, r.Scenario, r.Kernel.Spec)}
	if !r.Started.IsZero() {
		v.Started = r.Started.UTC().Format(time.RFC3339)
	}
	for _, k := range repKeys(r.Params) {
		v.Params = append(v.Params, k+"="+r.Params[k])
	}
	for _, a := range r.Asserts {
		if a.Passed {
			v.Passed++
		}
	}
	tl := newTimeline(r, samples)
	v.Plot = tl
	v.HasPlot = len(tl.steps) > 0 || len(tl.loads) > 0
	if v.HasPlot {
		v.Timeline = tl.svg()
	}
	v.Polls = tl.pollViews(r.Polls)
	v.Bars = cpuBars(r.Figures)
	for i, s := range r.Splats {
		v.Splats = append(v.Splats, splatView{i + 1, s, s.Where()})
	}
	for _, l := range r.Loads {
		lv := loadView{L: l, Loss: "-", Rate: "-", Latency: "-"}
		if l.Sent > 0 {
			lv.Loss = strconv.FormatFloat(100*(1-float64(l.Received)/float64(l.Sent)), 'f', 2, 64) + "%"
		}
		if n := len(l.PerSecond); n > 0 {
			lv.Rate = stats.FormatNum(float64(l.Received) / float64(n))
		}
		if q := l.Latency; q != nil {
			lv.Latency = fmt.Sprintf("p50 %s, p90 %s, p99 %s, p99.9 %s, max %s µs (%d)",
				stats.FormatNum(q.P50), stats.FormatNum(q.P90), stats.FormatNum(q.P99), stats.FormatNum(q.P999), stats.FormatNum(q.Max), q.Count)
		}
		v.Loads = append(v.Loads, lv)
	}
	for _, k := range repKeys(r.Figures) {
		v.Figures = append(v.Figures, [2]string{k, stats.FormatNum(r.Figures[k])})
	}
	for _, when := range deviceOrder(r.Devices) {
		v.Devices = append(v.Devices, deviceSnapshot{when, r.Devices[when]})
	}
	return v
}

// deviceOrder puts "after setup" before "at end", other snapshots after.
func deviceOrder(m map[string][]wire.Device) []string {
	keys := repKeys(m)
	rank := func(k string) int {
		switch k {
		case "after setup":
			return 0
		case "at end":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	return keys
}

// perCPU matches per-CPU figures: "softirqs.NET_RX.cpu1".
var perCPU = regexp.MustCompile(`^(.+)\.cpu(\d+)$`)

// cpuBarOrder is the order of the per-CPU charts; other metrics follow by name.
var cpuBarOrder = []string{"softirqs.NET_RX", "interrupts.CAL", "interrupts.RES", "softnet.received_rps", "ksoftirqd.cpu_seconds"}

// cpuBars draws one bar chart per per-CPU figure: the change of the metric
// on each CPU over the timeline.
func cpuBars(figures map[string]float64) []template.HTML {
	byMetric := map[string]map[int]float64{}
	for k, v := range figures {
		m := perCPU.FindStringSubmatch(k)
		if m == nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		cpu, _ := strconv.Atoi(m[2])
		if byMetric[m[1]] == nil {
			byMetric[m[1]] = map[int]float64{}
		}
		byMetric[m[1]][cpu] = v
	}
	metrics := repKeys(byMetric)
	rank := func(m string) int {
		if i := slices.Index(cpuBarOrder, m); i >= 0 {
			return i
		}
		return len(cpuBarOrder)
	}
	slices.SortStableFunc(metrics, func(a, b string) int { return rank(a) - rank(b) })
	var out []template.HTML
	for i, m := range metrics {
		cpus := make([]int, 0, len(byMetric[m]))
		for c := range byMetric[m] {
			cpus = append(cpus, c)
		}
		slices.Sort(cpus)
		var labels []string
		var vals []float64
		for _, c := range cpus {
			labels = append(labels, "cpu"+strconv.Itoa(c))
			vals = append(vals, byMetric[m][c])
		}
		out = append(out, barsSVG(m+" per CPU", labels, vals, svgPalette[i%len(svgPalette)]))
	}
	return out
}

// repCSS is the reports' style sheet.
const repCSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0;background:#fafafa}
main{max-width:1140px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:bold;letter-spacing:.5px}
.PASS{background:#2e7d32}.FAIL{background:#c62828}.ERROR{background:#ef6c00}.INCONCLUSIVE{background:#6d6d6d}
.banner{border-left:8px solid;padding:10px 14px;background:#fff;margin:10px 0}
.banner.INFO{border-color:#4e79a7;background:#eef3fa}.banner.PASS{border-color:#2e7d32;background:#eef7ee}.banner.FAIL{border-color:#c62828;background:#fdeeee}.banner.ERROR{border-color:#ef6c00;background:#fff4e5}.banner.INCONCLUSIVE{border-color:#6d6d6d;background:#f2f2f2}
table{border-collapse:collapse;background:#fff;margin:4px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.facts th{width:130px;font-weight:600}
tr.fail td{background:#fdeeee}tr.beyond td{background:#fff8e1}
.ok{color:#2e7d32;font-weight:bold}.bad{color:#c62828;font-weight:bold}
pre{background:#1e1e1e;color:#eee;padding:10px;overflow:auto;max-height:480px;font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;white-space:pre}
pre.cmd{white-space:pre-wrap;word-break:break-all;max-height:none;user-select:all}
.small{color:#666;font-size:12px}
.grid{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#fff;border:1px solid #ddd;padding:6px}
figure{margin:0;background:#fff;border:1px solid #ddd;padding:6px;overflow-x:auto}
figcaption{color:#555;font-size:12px;margin-top:4px}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.splat summary{color:#c62828}
.napi{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start;margin:0 0 8px}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px;vertical-align:-1px}
`

var repFuncs = template.FuncMap{
	"num":      stats.FormatNum,
	"secs":     func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "s" },
	"ksummary": results.KselftestSummary,
	"ksubs":    results.SubtestSummary,
	"join":     strings.Join,
	"base":     filepath.Base,
	"inc":      func(i int) int { return i + 1 },
	"short": func(s string) string {
		if len(s) > 16 {
			return s[:16]
		}
		return s
	},
}

var runPage = template.Must(template.New("run").Funcs(repFuncs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{{.Title}}</title>
<style>` + repCSS + `</style></head>
<body><main>
{{- $r := .R}}
<h1><span class="badge {{$r.Verdict}}">{{$r.Verdict}}</span>{{if $r.Coverage.NotExercised}} <span class="small">not exercised</span>{{end}} {{$r.Scenario}} <span class="small">on</span> {{$r.Kernel.Spec}}</h1>
<div class="banner {{$r.Verdict}}">
{{- if $r.Reasons}}<ul>{{range $r.Reasons}}<li>{{.}}</li>{{end}}</ul>
{{- else}}every assertion held ({{.Passed}} of {{len $r.Asserts}}), no splat{{end}}
{{- with $r.FlakyLines}}<ul class="flaky">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{- with $r.RetryOf}}<p>retry of <a href="../{{base .Dir}}/report.html">{{.Dir}}</a></p>{{end}}
{{- with $r.RetriedIn}}<p>retried in <a href="../{{base .}}/report.html">{{.}}</a></p>{{end}}
</div>
<table class="facts">
<tr><th>kernel</th><td>{{$r.Kernel.Spec}} · release {{if $r.Kernel.Release}}{{$r.Kernel.Release}}{{else}}unknown{{end}} · key <code title="{{$r.Kernel.Key}}">{{short $r.Kernel.Key}}</code></td></tr>
<tr><th>scenario</th><td>{{$r.Scenario}}{{if $r.ScenarioFile}} <span class="small">({{$r.ScenarioFile}})</span>{{end}}{{if .Params}} · {{join .Params " "}}{{end}}</td></tr>
<tr><th>started</th><td>{{if .Started}}{{.Started}}{{else}}-{{end}} · {{$r.Accel}} · seed {{$r.Seed}}</td></tr>
<tr><th>timings</th><td>boot {{secs $r.Timings.Boot}} · timeline {{secs $r.Timings.Timeline}} · total {{secs $r.Timings.Total}}</td></tr>
<tr><th>image</th><td><code title="{{$r.Image}}">{{short $r.Image}}</code></td></tr>
</table>

<h2>Assertions <span class="small">{{.Passed}} of {{len $r.Asserts}} passed</span></h2>
{{- if $r.Asserts}}
<table><tr><th>#</th><th>assertion</th><th>kind</th><th>measured</th><th>bound</th><th>result</th></tr>
{{- range $i, $a := $r.Asserts}}
<tr{{if not $a.Passed}} class="fail"{{end}}><td class="num">{{inc $i}}</td><td>{{$a.Name}}{{if $a.Line}} <span class="small">line {{$a.Line}}</span>{{end}}{{if and $a.Detail (not $a.Passed)}}<div class="small">{{$a.Detail}}</div>{{end}}</td>
<td>{{$a.Kind}}</td><td>{{$a.Measured}}{{if $a.Window}}<div class="small">{{$a.Window}}</div>{{end}}</td><td>{{$a.Bound}}</td><td>{{if and $a.Passed $a.Unmeasured}}<span class="small">not judged</span>{{else if $a.Passed}}<span class="ok">pass</span>{{else if $a.Unmeasured}}<span class="bad">not measured</span>{{else}}<span class="bad">FAIL</span>{{end}}</td></tr>
{{- end}}
</table>
{{- else}}<p class="small">no assertion was evaluated</p>{{end}}

{{- if $r.Injections}}
<h2>Race widening <span class="small">delays injected at kernel functions</span></h2>
<table><tr><th>probe</th><th>at</th><th>delay</th><th>probability</th><th>runs of the function</th><th>delays injected</th></tr>
{{- range $r.Injections}}
<tr{{if .Warning}} class="fail"{{end}}><td>{{.Name}} <span class="small">line {{.Line}}</span>{{if .Warning}}<div class="small">{{.Warning}}</div>{{end}}</td><td><code>{{.At}}</code> ({{.On}})</td><td>{{.Delay}}</td><td>{{.Probability}}</td><td class="num">{{.Hits}}</td><td class="num">{{.Fired}}</td></tr>
{{- end}}
</table>
{{- end}}

{{- with $r.Coverage}}
<h2>The series' functions <span class="small">calls the run counted of each function the kernel's own patches change</span></h2>
<table><tr><th>function</th><th>counted at</th><th>calls</th></tr>
{{- range .Funcs}}
<tr><td><code>{{.Func}}</code></td><td>{{if .Why}}<span class="small">not counted: {{.Why}}</span>{{else}}{{range .Probes}}<code>{{.}}</code> {{end}}{{if eq .Via "callers"}}<span class="small">(inlined: its callers, an upper bound)</span>{{end}}{{end}}</td><td class="num">{{if not .Why}}{{.Calls}}{{end}}</td></tr>
{{- end}}
</table>
{{- if .Partial}}<p class="small">read before the timeline ended: lower bounds</p>{{end}}
{{- end}}

{{- if $r.Kselftests}}
<h2>Kselftests <span class="small">{{ksummary $r.Kselftests}}</span></h2>
<table><tr><th>test</th><th>result</th><th>reason</th><th>subtests</th><th>time</th></tr>
{{- range $r.Kselftests}}
<tr{{if .Failed}} class="fail"{{end}}><td>{{.Name}}</td><td>{{if .Flaky}}<span class="bad">flaky</span>{{else if .Failed}}<span class="bad">{{.Status}}</span>{{else if eq .Status "pass"}}<span class="ok">pass</span>{{else}}{{.Status}}{{end}}</td>
<td>{{.Reason}}{{if .Flaky}}<div class="small">{{.FlakyLine}}</div>{{end}}{{with .Attempts}}<div class="small">attempts:{{range $i, $a := .}} <a href="{{$a.File}}">{{inc $i}}: {{$a.Status}}</a>{{end}}</div>{{end}}</td><td>{{with .Subtests}}{{ksubs .}}{{end}}</td><td class="num">{{secs .Seconds}}</td></tr>
{{- if .Output}}<tr><td colspan="5"><details{{if .Failed}} open="open"{{end}}><summary class="small">output</summary><pre>{{.Output}}</pre></details></td></tr>{{end}}
{{- end}}
</table>
{{- end}}

{{- with $r.Hang}}
<h2>Hang</h2>
<p class="bad">step “{{.Step}}” (line {{.Line}}) did not finish within {{.Deadline}}{{if .Function}}; stuck in <code>{{.Function}}</code>{{end}}</p>
{{if .Evidence}}<pre>{{.Evidence}}</pre>{{end}}
{{- end}}

{{- if .HasPlot}}
<h2>Timeline</h2>
<figure>{{.Timeline}}
<figcaption>
{{- if .Plot.HasLoads}}Received packets/s: what the sink of each load received (request/response loads: transactions) in each second of the load, drawn at the start step of the load plus that second; a hollow last point is a second the load stopped within. {{end}}
{{- if .Plot.HasNetRX}}NET_RX softirqs/s per CPU: between consecutive /proc/softirqs snapshots of the samplers. {{end}}
{{- if or .Plot.HasLoads .Plot.HasNetRX}}Shaded spans mark alternate steps of the first lane. {{end}}
Steps: one bar per timeline step, parallel steps in lanes below one another (hover for timings; red: the step failed).
{{- if .Plot.HasSplats}} Red dashed lines: kernel splats, S1, S2, … as listed under Splats.{{end}}</figcaption></figure>
{{- end}}

{{- if .Polls}}
<h2>Who polled each NAPI <span class="small">polls/s by execution context</span></h2>
{{- range .Polls}}
<div class="napi"><figure>{{.Plot}}</figure>
<table><tr><th>{{.NAPI}}</th><th>polls</th><th>packets</th><th>packets/poll</th></tr>
{{- range .Rows}}
<tr><td>{{with .Color}}<span class="sw" style="background:{{.}}"></span>{{end}}{{.Context}}</td><td class="num">{{.Polls}}</td><td class="num">{{.Packets}}</td><td class="num">{{.PerPoll}}</td></tr>
{{- end}}
</table></div>
{{- end}}
<p class="small">Polls per second of each NAPI between consecutive napi_polls snapshots, stacked by the context that ran the poll:
softirq (the NET_RX softirq on the way out of an interrupt), ksoftirqd (NET_RX work deferred to ksoftirqd),
kthread (threaded NAPI, the napi/ threads) and busypoll (a task busy-polling). Shaded spans and the bars below each plot
are the timeline's steps{{if .Plot.HasSplats}}, red dashed lines its splats{{end}}; NAPIs never polled are left out.
Totals add up the sampled intervals; hover an area for its context's totals.</p>
{{- end}}

{{- if .Bars}}
<h2>Per CPU <span class="small">change over the timeline</span></h2>
<div class="grid">{{range .Bars}}<div class="card">{{.}}</div>{{end}}</div>
{{- end}}

{{- if .Splats}}
<h2>Splats <span class="small">{{len .Splats}}</span></h2>
{{- range .Splats}}
<details class="splat"{{if not .S.Allowed}} open="open"{{end}}><summary>S{{.N}} {{.S.Title}} <span class="small">{{.S.Type}} · {{.Where}}{{if .S.Allowed}} · allowed: {{.S.Allowed}}{{end}}</span></summary>
<pre>{{.S.Report}}</pre></details>
{{- end}}
{{- end}}

{{- if .Loads}}
<h2>Loads</h2>
<table><tr><th>load</th><th>sent</th><th>received</th><th>loss</th><th>send errors</th><th>received/s</th><th>longest gap</th><th>latency</th></tr>
{{- range .Loads}}
<tr><td>{{.L.Name}}</td><td class="num">{{.L.Sent}}</td><td class="num">{{.L.Received}}</td><td class="num">{{.Loss}}</td><td class="num">{{.L.SendErrors}}</td><td class="num">{{.Rate}}</td><td class="num">{{.L.MaxGapMs}} ms</td><td>{{.Latency}}</td></tr>
{{- end}}
</table>
{{- end}}

{{- if $r.Steps}}
<details><summary>Steps ({{len $r.Steps}})</summary>
<table><tr><th>step</th><th>line</th><th>start</th><th>duration</th><th>iterations</th><th>tolerated</th><th>error</th></tr>
{{- range $r.Steps}}
<tr{{if .Error}} class="fail"{{end}}><td>{{.Name}}</td><td class="num">{{.Line}}</td><td class="num">{{secs .Start}}</td><td class="num">{{secs .Duration}}</td><td class="num">{{.Iterations}}</td><td class="num">{{.Tolerated}}</td><td>{{.Error}}</td></tr>
{{- if .Outputs}}<tr><td colspan="7">
{{- range .Outputs}}
<details{{if .ExitCode}} open="open"{{end}}><summary class="small">output of run {{.Run}} · exit {{.ExitCode}}{{with .File}} · <a href="{{.}}">{{.}}</a>{{end}}</summary>
{{- if .Stdout}}<pre>{{.Stdout}}</pre>{{end}}
{{- if .Stderr}}<div class="small">stderr</div><pre>{{.Stderr}}</pre>{{end}}
{{- if not (or .Stdout .Stderr)}}<p class="small">no output</p>{{end}}</details>
{{- end}}
{{- with .Unkept}}<p class="small">the output of {{.}} runs in between was not kept</p>{{end}}</td></tr>
{{- end}}
{{- end}}
</table></details>
{{- end}}

{{- if .Figures}}
<details><summary>Figures ({{len .Figures}})</summary>
<table><tr><th>figure</th><th>value</th></tr>
{{- range .Figures}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td></tr>{{end}}
</table></details>
{{- end}}

{{- if .Devices}}
<h2>Devices</h2>
<div class="grid">
{{- range .Devices}}
<div><b>{{.When}}</b>
<table><tr><th>device</th><th>netns</th><th>state</th><th>threaded</th><th>rx/tx queues</th><th>napi threads</th></tr>
{{- range .Devices}}
<tr><td>{{.Name}}</td><td>{{.Netns}}</td><td>{{.OperState}}</td><td>{{.Threaded}}</td><td class="num">{{.RxQueues}}/{{.TxQueues}}</td><td>{{join .NAPI " "}}</td></tr>
{{- end}}
</table></div>
{{- end}}
</div>
{{- end}}

{{- if $r.QEMU}}
<h2>QEMU command line</h2>
<pre class="cmd">{{$r.QEMU}}</pre>
{{- end}}

{{- with $r.Dropped}}
<p class="small">{{.}}</p>
{{- end}}
{{- if $r.ConsoleTail}}
<h2>Console tail</h2>
<pre>{{$r.ConsoleTail}}</pre>
{{- end}}
<p class="small">napilab report · {{$r.Scenario}} · {{$r.Kernel.Spec}} · {{$r.Verdict}}</p>
</main></body></html>
`))
