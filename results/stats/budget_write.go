package stats

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"napilab/results"
)

// WriteText writes p as an aligned table of the budgets, the reasons of the
// budgets that did not PASS, the overall verdict and the method. Write
// errors are not reported; w is expected to be a terminal or a buffer.
func (p *PerfCheck) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A (baseline): %s\nB (candidate): %s\n", p.Baseline, p.Candidate)
	if p.Mode != "" {
		fmt.Fprintf(w, "mode: %s (%s)\n", p.Mode, p.Params)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cells := range p.cells() {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	p.reasons(w, "  ")
	fmt.Fprintf(w, "\n%s\n%s\n", p.Summary(), p.Method())
}

// WriteMarkdown writes p as a GitHub-flavoured markdown table followed by
// the reasons, the verdict and the method. Write errors are not reported.
func (p *PerfCheck) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "A (baseline): `%s`, B (candidate): `%s`", p.Baseline, p.Candidate)
	if p.Mode != "" {
		fmt.Fprintf(w, ", mode `%s` (%s)", p.Mode, p.Params)
	}
	fmt.Fprint(w, "\n\n")
	writeMarkdownTable(w, p.cells(), "|---|--:|--:|--:|--:|--:|---|")
	p.reasons(w, "- ")
	fmt.Fprintf(w, "\n**%s**\n\n%s\n", p.Summary(), p.Method())
}

// WriteJSON writes p as indented JSON that ReadPerfCheck reads back; NaN is
// null and ±Inf are "inf" and "-inf", as in Comparison.WriteJSON.
func (p *PerfCheck) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(p)
}

// ReadPerfCheck reads what WriteJSON writes.
func ReadPerfCheck(r io.Reader) (*PerfCheck, error) {
	var p PerfCheck
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("failed to read the perf check: %w", err)
	}
	for _, v := range append([]results.Verdict{p.Verdict}, budgetVerdicts(p.Budgets)...) {
		switch v {
		case results.Pass, results.Inconclusive, results.Fail, results.Error:
		default:
			return nil, fmt.Errorf("failed to read the perf check: unknown verdict %q", v)
		}
	}
	return &p, nil
}

func budgetVerdicts(bs []BudgetResult) []results.Verdict {
	var out []results.Verdict
	for _, b := range bs {
		out = append(out, b.Verdict)
	}
	return out
}

type budgetResultJSON struct {
	Budget  Budget          `json:"budget"`
	Row     CompareRow      `json:"row"`
	Verdict results.Verdict `json:"verdict"`
	CV      cmpNum          `json:"cv"`
	Needed  int             `json:"needed,omitempty"`
	Reason  string          `json:"reason"`
	Shift   *Shift          `json:"shift,omitempty"`
}

// MarshalJSON writes a NaN CV as null.
func (r BudgetResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(budgetResultJSON{r.Budget, r.Row, r.Verdict, cmpNum(r.CV), r.Needed, r.Reason, r.Shift})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *BudgetResult) UnmarshalJSON(b []byte) error {
	var j budgetResultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = BudgetResult{j.Budget, j.Row, j.Verdict, float64(j.CV), j.Needed, j.Reason, j.Shift}
	return nil
}

// cells returns the header and one line of cells per budget.
func (p *PerfCheck) cells() [][]string {
	lines := [][]string{{"metric", "budget", "A median [q1..q3]", "B median [q1..q3]", "change [lo..hi]", "p", "verdict"}}
	for _, b := range p.Budgets {
		r := b.Row
		pv := "n/a"
		if !math.IsNaN(r.P) {
			pv = strconv.FormatFloat(r.P, 'g', 3, 64)
		}
		lines = append(lines, []string{b.Budget.Metric, b.Budget.String(), cmpSpread(r.A), cmpSpread(r.B), b.Change(), pv, string(b.Verdict)})
	}
	return lines
}

func (p *PerfCheck) reasons(w io.Writer, bullet string) {
	first := true
	for _, b := range p.Budgets {
		if b.Verdict == results.Pass {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nReasons:")
			first = false
		}
		fmt.Fprintf(w, "%s%s %s\n", bullet, b.Verdict, b.Reason)
	}
}

// Summary is the overall verdict with the count of each budget verdict.
func (p *PerfCheck) Summary() string {
	if len(p.Budgets) == 0 {
		return fmt.Sprintf("Verdict: %s (no budgets)", p.Verdict)
	}
	var parts []string
	for _, v := range []results.Verdict{results.Fail, results.Inconclusive, results.Error, results.Pass} {
		n := 0
		for _, b := range p.Budgets {
			if b.Verdict == v {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	return fmt.Sprintf("Verdict: %s (%d budgets: %s)", p.Verdict, len(p.Budgets), strings.Join(parts, ", "))
}

// Method is the decision rule and the test, in words.
func (p *PerfCheck) Method() string {
	method := budgetMethod
	for _, b := range p.Budgets {
		if b.Budget.MaxAbove > 0 {
			method += aboveMethod
			break
		}
	}
	return method + ". " + cmpMethod + " (alpha " + strconv.FormatFloat(p.Alpha, 'g', -1, 64) + ")."
}
