package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"

	"napilab/results"
	"napilab/results/stats"
)

// WriteCompareHTML writes a comparison as one self-contained page: the two
// sides, the table of every figure (medians, ratio with its interval,
// p-value, verdict), one dot plot per figure with each run's value, A above
// B, and the runs with links to their reports. a and b are each side's runs
// in order; the links assume the comparison folder's layout (a-1/, b-1/, …).
func WriteCompareHTML(w io.Writer, c *stats.Comparison, a, b []*results.Result) error {
	return comparePage.Execute(w, newCompareView(c, a, b))
}

type compareView struct {
	C        *stats.Comparison
	Scenario string
	Header   []string
	Rows     []compareRowView
	Plots    []template.HTML
	Runs     []compareRunView
	Beyond   int
	Perf     *stats.PerfCheck // set by WritePerfHTML: the budgets come first
	Budgets  []budgetCardView // one per budget of Perf
}

type compareRowView struct {
	Cells  []string
	Beyond bool
	Note   string
}

type compareRunView struct {
	Side, Link string
	N          int
	R          *results.Result
}

func newCompareView(c *stats.Comparison, a, b []*results.Result) *compareView {
	v := &compareView{C: c}
	cells := c.Cells()
	v.Header = cells[0]
	for i, row := range c.Rows {
		v.Rows = append(v.Rows, compareRowView{Cells: cells[i+1], Beyond: row.Beyond, Note: row.Note})
		if row.Beyond {
			v.Beyond++
		}
	}
	// The stored order is the order of first appearance; by name is easier to scan.
	slices.SortStableFunc(v.Rows, func(x, y compareRowView) int { return cmp.Compare(x.Cells[0], y.Cells[0]) })
	rows := slices.Clone(c.Rows)
	slices.SortStableFunc(rows, func(x, y stats.CompareRow) int {
		if x.Beyond != y.Beyond {
			if x.Beyond {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Metric, y.Metric)
	})
	for _, row := range rows {
		note := "within noise"
		if row.Beyond {
			note = fmt.Sprintf("B/A %s, p %.3g", stats.FormatNum(row.Ratio), row.P)
		}
		v.Plots = append(v.Plots, dotPlotSVG(row.Metric, note, figureValues(a, row.Metric), figureValues(b, row.Metric), row.A.Median, row.B.Median))
	}
	for side, runs := range map[string][]*results.Result{"a": a, "b": b} {
		for i, r := range runs {
			v.Runs = append(v.Runs, compareRunView{Side: side, N: i + 1, R: r, Link: fmt.Sprintf("%s-%d/%s", side, i+1, HTMLFile)})
			if v.Scenario == "" {
				v.Scenario = r.Scenario
			}
		}
	}
	slices.SortFunc(v.Runs, func(x, y compareRunView) int {
		return cmp.Or(cmp.Compare(x.N, y.N), cmp.Compare(x.Side, y.Side))
	})
	return v
}

// figureValues returns each run's finite value of a figure.
func figureValues(runs []*results.Result, metric string) []float64 {
	var out []float64
	for _, r := range runs {
		if v, ok := r.FigureValue(metric); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

var comparePage = template.Must(template.New("compare").Funcs(repFuncs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>compare {{.Scenario}}: {{.C.A}} vs {{.C.B}}</title>
<style>` + repCSS + `
.side-a{color:#4e79a7;font-weight:bold}.side-b{color:#f28e2b;font-weight:bold}
</style></head>
<body><main>
<h1>{{.Scenario}}: <span class="side-a">A {{.C.A}}</span> vs <span class="side-b">B {{.C.B}}</span></h1>
{{- with .Perf}}
<div class="banner {{.Verdict}}"><span class="badge {{.Verdict}}">{{.Verdict}}</span> {{.Summary}}
{{- if .Mode}}<div>mode <b>{{.Mode}}</b> ({{.Params}}): every figure below was measured in it</div>{{end}}
<div class="small">{{.Method}}</div></div>
<h2>Budgets</h2>
<p class="small">One dot per run, <span class="side-a">A (baseline)</span> above <span class="side-b">B (candidate)</span>; the bar is each side's median, the dashed red line the budget's bound.</p>
{{- end}}
{{- if .Budgets}}
<div class="grid">{{range .Budgets}}<div class="card" style="max-width:420px"><span class="badge {{.Verdict}}">{{.Verdict}}</span> <span class="small">{{.Reason}}</span><br/>{{.Plot}}</div>{{end}}</div>
{{- end}}
<div class="banner INFO">{{.Beyond}} of {{len .Rows}} figures differ beyond the noise (alpha {{.C.Alpha}}).
<div class="small">{{.C.Method}}</div></div>

<h2>Figures</h2>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{- range .Rows}}
<tr{{if .Beyond}} class="beyond"{{end}}>{{range $i, $c := .Cells}}<td{{if $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{- end}}
</table>
{{- $notes := false}}{{range .Rows}}{{if .Note}}{{$notes = true}}{{end}}{{end}}
{{- if $notes}}
<details><summary>Notes</summary><ul>
{{- range .Rows}}{{if .Note}}<li><b>{{index .Cells 0}}</b>: {{.Note}}</li>{{end}}{{end}}
</ul></details>
{{- end}}

<h2>Each run's value</h2>
<p class="small">One dot per run (hover for its value), <span class="side-a">A</span> above <span class="side-b">B</span>; the bar is each side's median. Figures beyond the noise come first.</p>
<div class="grid">{{range .Plots}}<div class="card">{{.}}</div>{{end}}</div>

<h2>Runs</h2>
<table><tr><th>run</th><th>verdict</th><th>kernel</th><th>started</th><th>total</th><th>report</th></tr>
{{- range .Runs}}
<tr{{if ne (print .R.Verdict) "PASS"}} class="fail"{{end}}><td class="side-{{.Side}}">{{.Side}}-{{.N}}</td><td><span class="badge {{.R.Verdict}}">{{.R.Verdict}}</span></td>
<td>{{.R.Kernel.Spec}} {{.R.Kernel.Release}}</td><td>{{.R.Started.UTC.Format "2006-01-02 15:04:05"}}</td><td class="num">{{secs .R.Timings.Total}}</td><td><a href="{{.Link}}">{{.Link}}</a></td></tr>
{{- end}}
</table>
<p class="small">napilab comparison · A {{.C.A}} · B {{.C.B}}</p>
</main></body></html>
`))
