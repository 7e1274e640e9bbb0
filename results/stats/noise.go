package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// NoiseRow is one metric's run-to-run spread in a series of runs of one
// kernel: what a budget on it can resolve.
type NoiseRow struct {
	Metric   string
	Summary  Summary
	CV       float64 // standard deviation / |mean|; NaN when the mean is 0 or N < 2
	RobustCV float64 // IQR/1.349/|median|, the CV CheckBudgets uses; NaN when the median is 0 or N < 2
}

// Noise returns the spread of every metric in samples (one kernel's runs),
// in order of first appearance; non-finite values are left out.
func Noise(samples []Sample) []NoiseRow {
	var order []string
	values := map[string][]float64{}
	for _, s := range samples {
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			continue
		}
		if _, ok := values[s.Metric]; !ok {
			order = append(order, s.Metric)
		}
		values[s.Metric] = append(values[s.Metric], s.Value)
	}
	var rows []NoiseRow
	for _, m := range order {
		x := values[m]
		r := NoiseRow{Metric: m, Summary: cmpSummarize(x), CV: math.NaN(), RobustCV: math.NaN()}
		if len(x) >= 2 {
			if mean := stat.Mean(x, nil); mean != 0 {
				r.CV = stat.StdDev(x, nil) / math.Abs(mean)
			}
			r.RobustCV = budgetCV(r.Summary, Summary{})
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b NoiseRow) int { return cmpStrings(a.Metric, b.Metric) })
	return rows
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
