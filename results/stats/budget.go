package stats

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"napilab/results"
)

// budgetPower is the power RunsNeeded is asked for when a budget is undecided.
const budgetPower = 0.8

// budgetMethod states the decision rule in the reports.
const budgetMethod = "A budget FAILs when the change is beyond the noise and its point estimate past the budget, " +
	"PASSes when the interval's worse end is within the budget, and is INCONCLUSIVE otherwise"

// aboveMethod is said when a budget is in the figure's units.
const aboveMethod = "; a budget in the figure's units (max_above) is decided on the difference of the medians instead of their ratio"

// Budget bounds how far one metric may move against its baseline.
type Budget struct {
	Metric  string  `json:"metric"`             // a figure name, as lab compare's rows
	MaxDrop float64 `json:"max_drop,omitempty"` // fraction (0.05 = 5 %); 0: not bounded
	MaxRise float64 `json:"max_rise,omitempty"` // fraction (0.10 = 10 %); 0: not bounded
	// MaxAbove bounds the rise in the figure's own units (B's median minus
	// A's), for a figure whose baseline is about 0 where a ratio of medians
	// is noise over noise; 0: not bounded. It goes alone, without the others.
	MaxAbove float64 `json:"max_above,omitempty"`
}

// BudgetResult is the verdict of one budget.
type BudgetResult struct {
	Budget  Budget          `json:"budget"`
	Row     CompareRow      `json:"row"`              // A = baseline, B = candidate
	Verdict results.Verdict `json:"verdict"`          // Pass, Fail, Inconclusive, or Error when a side has no values of the metric
	CV      float64         `json:"cv"`               // pooled run-to-run coefficient of variation (see budgetCV); NaN when no side has one
	Needed  int             `json:"needed,omitempty"` // runs per side that would decide, when Inconclusive
	Reason  string          `json:"reason"`           // one line for humans
	// Shift is B's median minus A's with its bootstrap 95% interval, for a
	// MaxAbove budget (nil for the others).
	Shift *Shift `json:"shift,omitempty"`
}

// Shift is a difference of medians and its interval, in the figure's units.
type Shift struct {
	Diff float64 `json:"diff"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// PerfCheck is the verdict of a candidate kernel's runs against a baseline's
// under a set of budgets.
type PerfCheck struct {
	Baseline  string `json:"baseline"`  // label of side A (the Sample.Kernel value)
	Candidate string `json:"candidate"` // label of side B
	// Mode is the scenario's perf mode and Params its parameters in force
	// ("threaded=1"), set by the caller: what the figures belong to.
	Mode    string          `json:"mode,omitempty"`
	Params  string          `json:"params,omitempty"`
	Alpha   float64         `json:"alpha"`   // significance level of the rank test
	Compare *Comparison     `json:"compare"` // every metric, as lab compare
	Budgets []BudgetResult  `json:"budgets"` // one per budget, in the order given
	Verdict results.Verdict `json:"verdict"` // the worst budget verdict (Worse), Pass when there are no budgets
}

// CheckBudgets compares the candidate's samples with the baseline's (as
// Compare does, with alpha and seed) and decides each budget. With ratio the
// candidate's median over the baseline's, lo..hi its bootstrap 95% interval,
// and past(x) meaning x < 1-MaxDrop (or x > 1+MaxRise, for each bound set):
//
//   - FAIL: the change is beyond the noise (p < alpha and the interval
//     excludes 1) and past(ratio).
//   - PASS: not FAIL, and the interval's worse end is within the budget
//     (lo >= 1-MaxDrop, hi <= 1+MaxRise): the runs exclude a breach.
//   - INCONCLUSIVE: otherwise; the noise hides whether the budget holds.
//     Needed says how many runs per side would decide:
//     RunsNeeded(CV, tolerance, alpha, 0.8), at least the rank test's floor.
//   - ERROR: a side has no finite value of the metric, or the budget bounds
//     neither direction.
//
// A median of 0 on both sides is no change (ratio 1, the interval from the
// same bootstrap); a rise from 0 to more than 0 is an infinite ratio, so a
// FAIL of a max_rise budget when p < alpha, and within a max_drop budget.
func CheckBudgets(baseline, candidate string, samples []Sample, budgets []Budget, alpha float64, seed int64) *PerfCheck {
	c := Compare(baseline, candidate, samples, alpha, seed)
	p := &PerfCheck{Baseline: baseline, Candidate: candidate, Alpha: c.Alpha, Compare: c, Verdict: results.Pass}
	rows := map[string]CompareRow{}
	for _, r := range c.Rows {
		rows[r.Metric] = r
	}
	for _, b := range budgets {
		row, ok := rows[b.Metric]
		if !ok {
			row = CompareRow{Metric: b.Metric, A: cmpSummarize(nil), B: cmpSummarize(nil),
				Ratio: math.NaN(), RatioLo: math.NaN(), RatioHi: math.NaN(), P: math.NaN()}
		}
		var br BudgetResult
		switch {
		case b.MaxAbove > 0:
			br = p.decideAbove(b, row, budgetShift(row, samples, baseline, candidate, seed))
		case row.A.Median == 0 && row.B.Median == 0:
			row = budgetBothZero(row, samples, baseline, candidate, seed)
			fallthrough
		default:
			br = p.decide(b, row)
		}
		if br.Verdict.Worse(p.Verdict) {
			p.Verdict = br.Verdict
		}
		p.Budgets = append(p.Budgets, br)
	}
	return p
}

// budgetBothZero takes a ratio of 0/0 as 1 and bootstraps its interval,
// which Compare leaves undefined.
func budgetBothZero(row CompareRow, samples []Sample, a, b string, seed int64) CompareRow {
	xa, xb := budgetValues(row.Metric, samples, a, b)
	row.Ratio = 1
	row.RatioLo, row.RatioHi = cmpBootstrap(xa, xb, budgetRand(row.Metric, seed), cmpRatio)
	note := "both medians are 0: the ratio is taken as 1"
	if row.Note != "" {
		note = row.Note + "; " + note
	}
	row.Note = note
	return row
}

// budgetValues are each side's finite values of a metric.
func budgetValues(metric string, samples []Sample, a, b string) (xa, xb []float64) {
	for _, s := range samples {
		if s.Metric != metric || math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue
		}
		switch s.Kernel {
		case a:
			xa = append(xa, s.Value)
		case b:
			xb = append(xb, s.Value)
		}
	}
	return xa, xb
}

// budgetRand is the bootstrap's generator for a metric: the seed and the
// metric's name, as Compare's.
func budgetRand(metric string, seed int64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(metric))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// budgetShift is B's median minus A's with its bootstrap interval (nil
// when a side has no values).
func budgetShift(row CompareRow, samples []Sample, a, b string, seed int64) *Shift {
	xa, xb := budgetValues(row.Metric, samples, a, b)
	if len(xa) == 0 || len(xb) == 0 {
		return nil
	}
	lo, hi := cmpBootstrap(xa, xb, budgetRand(row.Metric, seed), func(ma, mb float64) float64 { return mb - ma })
	return &Shift{Diff: row.B.Median - row.A.Median, Lo: lo, Hi: hi}
}

// decideAbove decides a MaxAbove budget as decide does a MaxRise one, on
// the shift instead of the ratio: FAIL when the shift is beyond the noise
// (p < alpha, its interval excludes 0) and past MaxAbove, PASS when its
// interval's upper end is within, INCONCLUSIVE otherwise, with the runs a
// decision would need from the pooled spread (IQR/1.349) over MaxAbove.
func (p *PerfCheck) decideAbove(b Budget, row CompareRow, sh *Shift) BudgetResult {
	r := BudgetResult{Budget: b, Row: row, CV: budgetCV(row.A, row.B), Shift: sh}
	switch {
	case b.MaxDrop > 0 || b.MaxRise > 0:
		r.Verdict, r.Reason = results.Error, row.Metric+": a max_above budget bounds nothing else (one budget per bound)"
		return r
	case sh == nil:
		r.Verdict, r.Reason = results.Error, row.Metric+": no values from "+p.missing(row)
		return r
	}
	head := r.head()
	beyond := row.P < p.Alpha && (sh.Lo > 0 || sh.Hi < 0)
	switch {
	case beyond && sh.Diff > b.MaxAbove:
		r.Verdict, r.Reason = results.Fail, head+": beyond the noise and the budget"
		return r
	case sh.Hi <= b.MaxAbove:
		r.Verdict, r.Reason = results.Pass, head+": within budget"
		return r
	}
	sd := budgetSD(row.A, row.B)
	p.undecided(&r, head, sd, b.MaxAbove, "spread "+FormatNum(sd), "a rise of "+FormatNum(b.MaxAbove))
	return r
}

// undecided makes r INCONCLUSIVE with the runs per side that would decide
// a change of tol at noise (both on one scale) and the reason.
func (p *PerfCheck) undecided(r *BudgetResult, head string, noise, tol float64, noiseText, change string) {
	row := r.Row
	r.Verdict = results.Inconclusive
	r.Needed = RunsNeeded(noise, tol, p.Alpha, budgetPower)
	if r.Needed == 0 { // no spread seen: only the rank test's floor is known
		r.Needed = minRuns(p.Alpha)
	}
	n := strconv.Itoa(row.A.N)
	if row.A.N != row.B.N {
		n += " vs " + strconv.Itoa(row.B.N)
	}
	if r.Needed > max(row.A.N, row.B.N) {
		r.Reason = fmt.Sprintf("%s: the noise (%s) hides %s at n=%s; about %d runs per side would decide",
			head, noiseText, change, n, r.Needed)
	} else {
		r.Reason = fmt.Sprintf("%s: the change is too close to the budget to decide at n=%s (%s); more runs per side would narrow the interval",
			head, n, noiseText)
	}
}

// missing names the side(s) without values.
func (p *PerfCheck) missing(row CompareRow) string {
	switch {
	case row.A.N == 0 && row.B.N == 0:
		return "either side"
	case row.A.N == 0:
		return "the baseline " + p.Baseline
	}
	return "the candidate " + p.Candidate
}

// budgetSD is the pooled run-to-run spread of both sides in the figure's
// units: per side the robust IQR/1.349, the root-mean-square of the sides
// with two values or more.
func budgetSD(a, b Summary) float64 {
	return budgetPool(a, b, func(s Summary) float64 { return 1 })
}

// budgetPool is the root-mean-square of each side's IQR/1.349 over scale(side),
// of the sides with two values or more and a finite, non-zero scale (NaN
// when none has).
func budgetPool(a, b Summary, scale func(Summary) float64) float64 {
	var vs []float64
	for _, s := range []Summary{a, b} {
		if d := scale(s); s.N >= 2 && d != 0 && !math.IsNaN(d) {
			vs = append(vs, (s.Q3-s.Q1)/1.349/d)
		}
	}
	return rms(vs)
}

// Change prints the budget's figure of change with its interval: the
// ratio as a percentage ("-23.4% [-27.9..-18.1%]"), or a MaxAbove
// budget's shift in the figure's units ("+0.21 [+0.18..+0.25]").
func (r BudgetResult) Change() string {
	if r.Shift == nil {
		return budgetInterval(r.Row)
	}
	return signedNum(r.Shift.Diff) + " [" + signedNum(r.Shift.Lo) + ".." + signedNum(r.Shift.Hi) + "]"
}

// signedNum is FormatNum with a sign.
func signedNum(f float64) string {
	if f >= 0 {
		return "+" + FormatNum(f)
	}
	return FormatNum(f)
}

func (p *PerfCheck) decide(b Budget, row CompareRow) BudgetResult {
	r := BudgetResult{Budget: b, Row: row, CV: budgetCV(row.A, row.B)}
	head := r.head()
	switch {
	case b.MaxDrop <= 0 && b.MaxRise <= 0:
		r.Verdict, r.Reason = results.Error, row.Metric+": the budget bounds neither a drop nor a rise"
		return r
	case row.A.N == 0 || row.B.N == 0:
		r.Verdict, r.Reason = results.Error, row.Metric+": no values from "+p.missing(row)
		return r
	}
	drop, rise := b.MaxDrop > 0, b.MaxRise > 0
	past := drop && row.Ratio < 1-b.MaxDrop || rise && row.Ratio > 1+b.MaxRise
	if row.Beyond && past {
		r.Verdict, r.Reason = results.Fail, head+": beyond the noise and the budget"
		return r
	}
	// NaN interval ends fail both comparisons, so they never PASS.
	dropOK := !drop || row.RatioLo >= 1-b.MaxDrop
	riseOK := !rise || row.RatioHi <= 1+b.MaxRise
	if dropOK && riseOK {
		r.Verdict, r.Reason = results.Pass, head+": within budget"
		return r
	}
	tol := math.Inf(1)
	if !dropOK {
		tol = b.MaxDrop
	}
	if !riseOK {
		tol = min(tol, b.MaxRise)
	}
	p.undecided(&r, head, r.CV, tol, "CV "+budgetCVPct(r.CV), "a "+budgetPct(tol, false)+" change")
	return r
}

// budgetCV is the pooled run-to-run coefficient of variation of both sides:
// per side the robust IQR/1.349/|median| (a side with median 0 or fewer than
// two values has none), the root-mean-square of the sides that have one.
func budgetCV(a, b Summary) float64 {
	return budgetPool(a, b, func(s Summary) float64 { return math.Abs(s.Median) })
}

// String prints the bounds as signed percentages, a MaxAbove bound in the
// figure's units: "-5%", "+10%", "-5%/+10%", "+0.02".
func (b Budget) String() string {
	var parts []string
	if b.MaxDrop > 0 {
		parts = append(parts, budgetPct(-b.MaxDrop, true))
	}
	if b.MaxRise > 0 {
		parts = append(parts, budgetPct(b.MaxRise, true))
	}
	if b.MaxAbove > 0 {
		parts = append(parts, signedNum(b.MaxAbove))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "/")
}

// head begins a budget's reason: the figure, its change with its interval
// and p, and the budget: "m -23.4% [-27.9..-18.1%] p=0.008, budget -5%".
func (r BudgetResult) head() string {
	s := r.Row.Metric + " " + r.Change()
	if !math.IsNaN(r.Row.P) {
		s += " p=" + strconv.FormatFloat(r.Row.P, 'g', 2, 64)
	}
	return s + ", budget " + r.Budget.String()
}

// budgetInterval prints a row's ratio as a signed change with its
// interval: "-23.4% [-27.9..-18.1%]".
func budgetInterval(r CompareRow) string {
	s := FormatChange(r.Ratio - 1)
	if !math.IsNaN(r.RatioLo) {
		s += " [" + strings.TrimSuffix(FormatChange(r.RatioLo-1), "%") + ".." + FormatChange(r.RatioHi-1) + "]"
	}
	return s
}

// FormatChange prints a fraction as a signed percentage with one decimal.
func FormatChange(f float64) string {
	switch {
	case math.IsNaN(f):
		return "n/a"
	case math.IsInf(f, 1):
		return "+inf%"
	case math.IsInf(f, -1):
		return "-inf%"
	}
	s := strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
	if f >= 0 {
		s = "+" + s
	}
	return s
}

// budgetPct prints a fraction as a percentage with up to 4 significant
// digits ("5%", "12.5%"), signed when asked.
func budgetPct(f float64, signed bool) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	s := strconv.FormatFloat(f*100, 'g', 4, 64) + "%"
	if signed && f >= 0 {
		s = "+" + s
	}
	return s
}

// budgetCVPct prints a coefficient of variation with one decimal: "6.3%".
func budgetCVPct(cv float64) string {
	if math.IsNaN(cv) {
		return "n/a"
	}
	return strconv.FormatFloat(cv*100, 'f', 1, 64) + "%"
}
