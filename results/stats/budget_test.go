package stats

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
)

var budgetBase = []float64{100, 101, 99, 100.5, 99.5}

// TestCheckBudgetsRule decides one budget per case and checks the verdict,
// the runs needed and the reason's shape.
func TestCheckBudgetsRule(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b       []float64
		budget     Budget
		want       results.Verdict
		needed     int // -1: RunsNeeded(CV, tol, 0.05, 0.8) and more than n
		reason     string
		ratio      float64
		noBaseline bool
	}{
		{name: "drop beyond noise and budget", a: budgetBase, b: []float64{76, 77, 75, 76.5, 75.5},
			budget: Budget{MaxDrop: .05}, want: results.Fail, ratio: 0.76,
			reason: "m -24.0% [-25.2..-22.7%] p=0.0079, budget -5%: beyond the noise and the budget"},
		{name: "drop within budget", a: budgetBase, b: []float64{99, 100, 98, 99.5, 98.5},
			budget: Budget{MaxDrop: .05}, want: results.Pass, ratio: 0.99,
			reason: "m -1.0% [-2.5..+0.5%] p=0.13, budget -5%: within budget"},
		{name: "drop beyond noise but within budget", a: budgetBase, b: []float64{97, 96.5, 97.5, 96.8, 97.2},
			budget: Budget{MaxDrop: .10}, want: results.Pass, ratio: 0.97, reason: "within budget"},
		{name: "a drop under a rise budget", a: budgetBase, b: []float64{76, 77, 75, 76.5, 75.5},
			budget: Budget{MaxRise: .10}, want: results.Pass, ratio: 0.76, reason: "within budget"},
		{name: "rise beyond noise and budget", a: budgetBase, b: []float64{120, 121, 119, 120.5, 119.5},
			budget: Budget{MaxRise: .10}, want: results.Fail, ratio: 1.2, reason: "+20.0% [+18.4..+21.6%] p=0.0079, budget +10%: beyond the noise and the budget"},
		{name: "rise under both bounds", a: budgetBase, b: []float64{120, 121, 119, 120.5, 119.5},
			budget: Budget{MaxDrop: .05, MaxRise: .10}, want: results.Fail, ratio: 1.2, reason: "budget -5%/+10%: beyond"},
		{name: "noise hides a rise", a: []float64{100, 90, 110, 95, 105}, b: []float64{103, 93, 113, 98, 108},
			budget: Budget{MaxRise: .10}, want: results.Inconclusive, needed: -1, ratio: 1.03,
			reason: "m +3.0% [-10.9..+18.9%] p=0.69, budget +10%: the noise (CV 7.3%) hides a 10% change at n=5; about 14 runs per side would decide"},
		{name: "too few runs for the rank test", a: []float64{100, 101, 99}, b: []float64{80, 81, 79},
			budget: Budget{MaxDrop: .05}, want: results.Inconclusive, needed: 4, ratio: 0.8,
			reason: "at n=3; about 4 runs per side would decide"},
		{name: "no spread and too few runs", a: []float64{100, 100, 100}, b: []float64{80, 80, 80},
			budget: Budget{MaxDrop: .05}, want: results.Inconclusive, needed: 4, ratio: 0.8,
			reason: "the noise (CV 0.0%) hides a 5% change at n=3; about 4 runs per side would decide"},
		{name: "too close to the budget", a: budgetBase, b: []float64{97, 95, 96, 94.5, 97.5},
			budget: Budget{MaxDrop: .05}, want: results.Inconclusive, needed: 4, ratio: 0.96,
			reason: "-4.0% [-5.9..-2.0%] p=0.0079, budget -5%: the change is too close to the budget to decide at n=5"},
		{name: "rise from 0", a: []float64{0, 0, 0, 0, 0}, b: []float64{3, 4, 5, 6, 7},
			budget: Budget{MaxRise: .10}, want: results.Fail, ratio: math.Inf(1), reason: "+inf% [+inf..+inf%] p=0.0079"},
		{name: "rise from 0 under a drop budget", a: []float64{0, 0, 0, 0, 0}, b: []float64{3, 4, 5, 6, 7},
			budget: Budget{MaxDrop: .10}, want: results.Pass, ratio: math.Inf(1), reason: "within budget"},
		{name: "both 0", a: []float64{0, 0, 0, 0, 0}, b: []float64{0, 0, 0, 0, 0},
			budget: Budget{MaxRise: .10}, want: results.Pass, ratio: 1, reason: "m +0.0% [+0.0..+0.0%] p=1, budget +10%: within budget"},
		{name: "drop to 0", a: budgetBase, b: []float64{0, 0, 0, 0, 0},
			budget: Budget{MaxDrop: .5}, want: results.Fail, ratio: 0, reason: "-100.0%"},
		{name: "no candidate values", a: budgetBase, budget: Budget{MaxDrop: .05}, want: results.Error,
			ratio: math.NaN(), reason: "m: no values from the candidate B"},
		{name: "no baseline values", b: budgetBase, budget: Budget{MaxDrop: .05}, want: results.Error,
			ratio: math.NaN(), reason: "m: no values from the baseline A"},
		{name: "no values at all", budget: Budget{MaxDrop: .05}, want: results.Error, ratio: math.NaN(),
			reason: "m: no values from either side"},
		{name: "no bound", a: budgetBase, b: budgetBase, want: results.Error, ratio: 1,
			reason: "m: the budget bounds neither a drop nor a rise"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.budget.Metric = "m"
			p := CheckBudgets("A", "B", cmpSamples("m", c.a, c.b), []Budget{c.budget}, 0.05, 1)
			if len(p.Budgets) != 1 {
				t.Fatalf("%d budget results, want 1", len(p.Budgets))
			}
			r := p.Budgets[0]
			if r.Verdict != c.want || p.Verdict != c.want {
				t.Errorf("verdict %s (check %s), want %s: %s", r.Verdict, p.Verdict, c.want, r.Reason)
			}
			if !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q, want it to contain %q", r.Reason, c.reason)
			}
			if !cmpClose(r.Row.Ratio, c.ratio) && !(math.IsNaN(c.ratio) && math.IsNaN(r.Row.Ratio)) {
				t.Errorf("ratio %g, want %g", r.Row.Ratio, c.ratio)
			}
			want := c.needed
			if want == -1 {
				want = RunsNeeded(r.CV, .10, 0.05, 0.8)
				if want <= max(len(c.a), len(c.b)) {
					t.Errorf("RunsNeeded = %d, the case wants more than n", want)
				}
			}
			if r.Needed != want {
				t.Errorf("needed %d, want %d", r.Needed, want)
			}
		})
	}
}

// TestCheckBudgetsVerdict checks that the check takes the worst budget
// verdict, and PASS without budgets.
func TestCheckBudgetsVerdict(t *testing.T) {
	s := append(cmpSamples("drop", budgetBase, []float64{76, 77, 75, 76.5, 75.5}),
		cmpSamples("noisy", []float64{100, 90, 110, 95, 105}, []float64{103, 93, 113, 98, 108})...)
	for _, c := range []struct {
		budgets []Budget
		want    results.Verdict
	}{
		{nil, results.Pass},
		{[]Budget{{Metric: "drop", MaxRise: .1}}, results.Pass},
		{[]Budget{{Metric: "drop", MaxRise: .1}, {Metric: "noisy", MaxRise: .1}}, results.Inconclusive},
		{[]Budget{{Metric: "noisy", MaxRise: .1}, {Metric: "drop", MaxDrop: .1}, {Metric: "drop", MaxRise: .1}}, results.Fail},
		{[]Budget{{Metric: "drop", MaxDrop: .1}, {Metric: "gone", MaxRise: .1}}, results.Error},
	} {
		p := CheckBudgets("A", "B", s, c.budgets, 0.05, 1)
		if p.Verdict != c.want {
			t.Errorf("%v: verdict %s, want %s", c.budgets, p.Verdict, c.want)
		}
		if len(p.Compare.Rows) != 2 {
			t.Errorf("%d compare rows, want every metric (2)", len(p.Compare.Rows))
		}
	}
}

// budgetExample has one budget of each verdict.
func budgetExample() *PerfCheck {
	s := append(cmpSamples("udp.rx_pps", budgetBase, []float64{76, 77, 75, 76.5, 75.5}),
		cmpSamples("softirqs.NET_RX/s", []float64{100, 90, 110, 95, 105}, []float64{103, 93, 113, 98, 108})...)
	s = append(s, cmpSamples("rr.p99_us", budgetBase, []float64{99, 100, 98, 99.5, 98.5})...)
	s = append(s, cmpSamples("ipis", []float64{0, 0, 0, 0, 0}, []float64{3, 4, 5, 6, 7})...)
	return CheckBudgets("A", "B", s, []Budget{
		{Metric: "udp.rx_pps", MaxDrop: .05},
		{Metric: "softirqs.NET_RX/s", MaxRise: .10},
		{Metric: "rr.p99_us", MaxRise: .15},
		{Metric: "ipis", MaxRise: .10},
		{Metric: "missing", MaxDrop: .05},
	}, 0.05, 1)
}

// TestPerfCheckWriters compares the text, markdown and JSON forms with
// testdata/perf/*.golden (rewritten by -update); the report package's
// tests render json.golden.
func TestPerfCheckWriters(t *testing.T) {
	p := budgetExample()
	for _, c := range []struct {
		file  string
		write func(*bytes.Buffer)
	}{
		{"text.golden", func(b *bytes.Buffer) { p.WriteText(b) }},
		{"markdown.golden", func(b *bytes.Buffer) { p.WriteMarkdown(b) }},
		{"json.golden", func(b *bytes.Buffer) { p.WriteJSON(b) }},
	} {
		var buf bytes.Buffer
		c.write(&buf)
		golden := filepath.Join("testdata", "perf", c.file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Errorf("output differs from %s (run with -update):\n%s", golden, buf.String())
		}
	}
}

// TestPerfCheckTextAligned checks that the table's columns line up.
func TestPerfCheckTextAligned(t *testing.T) {
	var buf bytes.Buffer
	budgetExample().WriteText(&buf)
	lines := strings.Split(buf.String(), "\n")
	header := lines[3]
	for _, name := range []string{"budget", "A median", "B median", "change", "p ", "verdict"} {
		col := strings.Index(header, name)
		for _, line := range lines[4:9] {
			if len(line) <= col || line[col] == ' ' || line[col-2:col] != "  " {
				t.Errorf("column %q at %d misaligned in %q", name, col, line)
			}
		}
	}
}

// TestPerfCheckJSON round-trips a check holding NaN (an ERROR budget, a CV
// of a side with median 0) and Inf (a rise from 0).
func TestPerfCheckJSON(t *testing.T) {
	p := budgetExample()
	var first bytes.Buffer
	if err := p.WriteJSON(&first); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPerfCheck(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := q.WriteJSON(&second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("JSON changed on a round trip:\n%s\nvs\n%s", first.String(), second.String())
	}
	if q.Verdict != results.Error || len(q.Budgets) != 5 || q.Compare == nil || len(q.Compare.Rows) != 4 {
		t.Fatalf("read back %s with %d budgets", q.Verdict, len(q.Budgets))
	}
	if r := q.Budgets[4]; !math.IsNaN(r.CV) || !math.IsNaN(r.Row.P) || r.Verdict != results.Error {
		t.Errorf("missing metric read back as %+v", r)
	}
	if r := q.Budgets[3]; !math.IsInf(r.Row.Ratio, 1) || r.Verdict != results.Fail {
		t.Errorf("rise from 0 read back as %+v", r)
	}
	if r := q.Budgets[1]; r.Needed != p.Budgets[1].Needed || r.CV != p.Budgets[1].CV || r.Budget != p.Budgets[1].Budget {
		t.Errorf("inconclusive budget read back as %+v, want %+v", r, p.Budgets[1])
	}
	for _, bad := range []string{`{"verdict": "MAYBE"}`, `{"budgets": [{"verdict": "SO-SO"}], "verdict": "PASS"}`, `{"verdict": "PASS", "extra": 1}`, `{`} {
		if _, err := ReadPerfCheck(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadPerfCheck(%s) succeeded", bad)
		}
	}
}

// TestMaxAbove decides budgets in the figure's units on a baseline of about
// 0 (NET_RX softirqs per datagram in threaded mode), where a ratio budget
// is noise over noise: a clean kernel's 0.0001 against 0.0003 is +200%.
func TestMaxAbove(t *testing.T) {
	near0 := []float64{0.0001, 0.0003, 0.0002, 0.0001, 0.0002, 0.0004}
	for _, c := range []struct {
		name   string
		b      []float64
		budget Budget
		want   results.Verdict
		reason string
	}{
		{name: "one softirq per poll", b: []float64{0.21, 0.19, 0.25, 0.2, 0.23, 0.22},
			budget: Budget{MaxAbove: 0.02}, want: results.Fail, reason: "m +0.2148 [+0.1948..+0.2398] p=0.0022, budget +0.02: beyond the noise and the budget"},
		{name: "clean kernel, thrice the baseline", b: []float64{0.0004, 0.0006, 0.0005, 0.0007, 0.0005, 0.0006},
			budget: Budget{MaxAbove: 0.02}, want: results.Pass, reason: "budget +0.02: within budget"},
		{name: "the ratio budget on the same runs", b: []float64{0.0004, 0.0006, 0.0005, 0.0007, 0.0005, 0.0006},
			budget: Budget{MaxRise: 0.5}, want: results.Fail, reason: "+175.0%"},
		{name: "too close to decide", b: []float64{0.01, 0.03, 0.02, 0.04, 0.0, 0.025},
			budget: Budget{MaxAbove: 0.02}, want: results.Inconclusive, reason: "m +0.0223 [+0.00485..+0.0348] p=0.054, budget +0.02: the change is too close to the budget to decide at n=6 (spread 0.008518)"},
		{name: "with another bound", b: near0, budget: Budget{MaxAbove: 0.02, MaxRise: 0.1}, want: results.Error,
			reason: "a max_above budget bounds nothing else"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.budget.Metric = "m"
			p := CheckBudgets("A", "B", cmpSamples("m", near0, c.b), []Budget{c.budget}, 0.05, 1)
			r := p.Budgets[0]
			if r.Verdict != c.want || !strings.Contains(r.Reason, c.reason) {
				t.Errorf("%s: %s, want %s with %q", r.Verdict, r.Reason, c.want, c.reason)
			}
			if c.budget.MaxAbove > 0 && c.want != results.Error && (r.Shift == nil || r.Shift.Lo > r.Shift.Diff || r.Shift.Hi < r.Shift.Diff) {
				t.Errorf("shift %+v: want the difference of medians inside its interval", r.Shift)
			}
		})
	}
	var buf bytes.Buffer
	p := CheckBudgets("A", "B", cmpSamples("m", near0, []float64{0.21, 0.19, 0.25, 0.2, 0.23, 0.22}), []Budget{{Metric: "m", MaxAbove: 0.02}}, 0.05, 1)
	p.WriteMarkdown(&buf)
	if !strings.Contains(buf.String(), "| m | +0.02 |") || !strings.Contains(buf.String(), "+0.2148 [+0.1948..+0.2398]") {
		t.Errorf("the table shows the budget and the shift in the figure's units:\n%s", buf.String())
	}
}
