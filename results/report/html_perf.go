package report

import (
	"html/template"
	"io"
	"math"

	"napilab/results"
	"napilab/results/stats"
)

// WritePerfHTML writes a perf check as one self-contained page: first the
// verdict and one plot per budget (each run's value as a dot, A the
// baseline above B the candidate, the medians marked, the budget's bound
// drawn at median(A)*(1-MaxDrop), *(1+MaxRise) or +MaxAbove) with its reason, then
// everything WriteCompareHTML shows. a and b are each side's runs in order.
func WritePerfHTML(w io.Writer, p *stats.PerfCheck, a, b []*results.Result) error {
	v := newCompareView(p.Compare, a, b)
	v.Perf = p
	for _, br := range p.Budgets {
		r := br.Row
		var limits []float64
		if br.Budget.MaxDrop > 0 {
			limits = append(limits, r.A.Median*(1-br.Budget.MaxDrop))
		}
		if br.Budget.MaxRise > 0 {
			limits = append(limits, r.A.Median*(1+br.Budget.MaxRise))
		}
		if br.Budget.MaxAbove > 0 {
			limits = append(limits, r.A.Median+br.Budget.MaxAbove)
		}
		note := string(br.Verdict)
		if br.Shift != nil || !math.IsNaN(r.Ratio) {
			note += " " + br.Change() + ", budget " + br.Budget.String()
		}
		plot := dotPlotSVG(r.Metric, note, figureValues(a, r.Metric), figureValues(b, r.Metric), r.A.Median, r.B.Median, limits...)
		v.Budgets = append(v.Budgets, budgetCardView{Plot: plot, Verdict: br.Verdict, Reason: br.Reason})
	}
	return comparePage.Execute(w, v)
}

// budgetCardView is one budget's plot on the perf page.
type budgetCardView struct {
	Plot    template.HTML
	Verdict results.Verdict
	Reason  string
}
