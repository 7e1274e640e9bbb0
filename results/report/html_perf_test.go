package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/stats"
)

// TestWritePerfHTML checks that the page has each budget's plot first, with
// the budget line at median(A)*(1-MaxDrop), every run's dot and the verdict.
// The check is the stats tests' example with one budget of each verdict
// (its JSON golden).
func TestWritePerfHTML(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "stats", "testdata", "perf", "json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := stats.ReadPerfCheck(f)
	if err != nil {
		t.Fatal(err)
	}
	runs := func(vals []float64) []*results.Result {
		var out []*results.Result
		for _, v := range vals {
			out = append(out, &results.Result{Scenario: "udp-flood", Verdict: results.Pass, Figures: map[string]float64{"udp.rx_pps": v}})
		}
		return out
	}
	a, b := runs([]float64{100, 101, 99, 100.5, 99.5}), runs([]float64{76, 77, 75, 76.5, 75.5})
	var buf bytes.Buffer
	if err := WritePerfHTML(&buf, p, a, b); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	start := strings.Index(page, `<div class="banner ERROR">`)
	end := strings.Index(page, "<h2>Figures</h2>")
	if start < 0 || end < start || !strings.Contains(page[start:end], "<h2>Budgets</h2>") {
		t.Fatalf("no verdict banner and budget section before the figures:\n%s", page)
	}
	budgets := page[start:end]
	plot := budgets[strings.Index(budgets, `aria-label="udp.rx_pps"`):]
	plot = plot[:strings.Index(plot, "</svg>")]
	if n := strings.Count(plot, `class="budget"`); n != 1 {
		t.Errorf("%d budget lines in the udp.rx_pps plot, want 1", n)
	}
	if !strings.Contains(plot, ">budget 95<") { // median(A) 100 * (1 - 5%)
		t.Errorf("no budget label at 95 in:\n%s", plot)
	}
	for _, v := range []string{"A run 1: 100", "A run 5: 99.5", "B run 1: 76", "B run 5: 75.5"} {
		if !strings.Contains(plot, "<title>"+v+"</title>") {
			t.Errorf("no dot %q in the plot", v)
		}
	}
	if n := strings.Count(plot, "<circle"); n != 10 {
		t.Errorf("%d dots, want 10", n)
	}
	for _, want := range []string{`<span class="badge FAIL">FAIL</span>`, "beyond the noise and the budget", `<span class="badge INCONCLUSIVE">`, "Verdict: ERROR"} {
		if !strings.Contains(budgets, want) {
			t.Errorf("budget section lacks %q", want)
		}
	}
	if n := strings.Count(budgets, `<div class="card" style="max-width:420px">`); n != 5 {
		t.Errorf("%d budget cards, want 5", n)
	}
}
