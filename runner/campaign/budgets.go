package campaign

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"napilab/results"
	"napilab/results/report"
	"napilab/results/stats"
	"napilab/scenarios"
)

// budgets converts the budgets that hold in the scenario's perf mode.
func budgets(s *scenarios.Scenario) []stats.Budget {
	var out []stats.Budget
	for _, b := range s.BudgetsInForce() {
		m, drop, rise, above := b.Bounds()
		out = append(out, stats.Budget{Metric: m, MaxDrop: drop, MaxRise: rise, MaxAbove: above})
	}
	return out
}

// modeParams writes the parameters a perf mode sets, as in force: "threaded=1".
func modeParams(s *scenarios.Scenario) string {
	m := s.Mode()
	if m == "" {
		return ""
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.Perf.Modes[m])) {
		kv = append(kv, k+"="+s.Values[k])
	}
	return strings.Join(kv, ", ")
}

// ModeTable keeps, per scenario and kernel, each mode's verdict and
// budget changes, to print the modes side by side.
type ModeTable map[string]map[string]string

func (mt ModeTable) add(scenario, kernel, mode string, v results.Verdict, pc *stats.PerfCheck) {
	if mode == "" {
		return
	}
	key := scenario + " on " + kernel
	if mt[key] == nil {
		mt[key] = map[string]string{}
	}
	var parts []string
	for _, b := range pc.Budgets {
		change := fmt.Sprintf("%+.1f%%", (b.Row.Ratio-1)*100)
		if b.Shift != nil {
			change = fmt.Sprintf("%+.3g", b.Shift.Diff)
		}
		parts = append(parts, b.Budget.Metric+" "+change)
	}
	mt[key][mode] = fmt.Sprintf("%s %s (%s)", mode, v, strings.Join(parts, ", "))
}

// Print draws the modes of each scenario side by side, where it ran in
// more than one.
func (mt ModeTable) Print(w io.Writer) {
	for _, key := range slices.Sorted(maps.Keys(mt)) {
		if len(mt[key]) < 2 {
			continue
		}
		var cols []string
		for _, m := range slices.Sorted(maps.Keys(mt[key])) {
			cols = append(cols, mt[key][m])
		}
		fmt.Fprintf(w, "MODES  perf %s: %s\n", key, strings.Join(cols, " | "))
	}
}

// writePerf writes the budget check as perf.json, perf.md and perf.html.
func writePerf(dir string, pc *stats.PerfCheck, a, b []*results.Result) error {
	for name, write := range map[string]func(io.Writer) error{
		"perf.json": pc.WriteJSON,
		"perf.md":   func(w io.Writer) error { pc.WriteMarkdown(w); return nil },
		"perf.html": func(w io.Writer) error { return report.WritePerfHTML(w, pc, a, b) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// CoverageLine says which of the series' functions the run reached.
func CoverageLine(c *results.Coverage) string {
	if c == nil {
		return ""
	}
	var parts []string
	for _, f := range c.Funcs {
		switch {
		case !f.Counted():
			parts = append(parts, f.Func+" not counted ("+f.Why+")")
		case f.Via == "callers":
			parts = append(parts, fmt.Sprintf("%s at most %d (inlined; its callers %s)", f.Func, f.Calls, strings.Join(f.Probes, ", ")))
		default:
			parts = append(parts, fmt.Sprintf("%s %d", f.Func, f.Calls))
		}
	}
	line := "series functions called: " + strings.Join(parts, ", ")
	if c.Partial {
		line += " (read before the timeline ended: lower bounds)"
	}
	return line
}
