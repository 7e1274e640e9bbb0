package campaign

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"napilab/scenarios"
)

// Planned is one scenario with one parameter set.
type Planned struct {
	Scenario *scenarios.Scenario
	Params   map[string]string
}

// Plan opens every file with every parameter set, printing each warning
// once to warn, and splits a perf scenario with modes into one per mode
// (unless the parameters pin one): every scenario is checked before
// anything builds or boots.
func Plan(files []string, sets []map[string]string, warn io.Writer) ([]Planned, error) {
	var plan []Planned
	warned := map[string]bool{}
	for _, f := range files {
		for _, p := range sets {
			s, err := scenarios.Open(f, p)
			if err != nil {
				return nil, err
			}
			for _, w := range s.Warnings {
				if !warned[w] {
					fmt.Fprintln(warn, w)
					warned[w] = true
				}
			}
			if s.Perf == nil || len(s.Perf.Modes) == 0 || s.PinsMode(p) {
				plan = append(plan, Planned{s, p})
				continue
			}
			for _, mode := range s.ModeNames() { // each kernel keeps the modes its series is about
				ms, merged, err := s.ForMode(mode, p)
				if err != nil {
					return nil, err
				}
				plan = append(plan, Planned{ms, merged})
			}
		}
	}
	return plan, nil
}

// ExpandMatrix returns one parameter set per combination of matrix values
// (name=v1,v2,...), each on top of the fixed params.
func ExpandMatrix(fixed map[string]string, matrix []string) ([]map[string]string, error) {
	sets := []map[string]string{fixed}
	for _, m := range matrix {
		name, vals, ok := strings.Cut(m, "=")
		if !ok || name == "" || vals == "" {
			return nil, fmt.Errorf("bad --matrix %q: want name=v1,v2", m)
		}
		var next []map[string]string
		for _, set := range sets {
			for _, v := range strings.Split(vals, ",") {
				p := map[string]string{}
				for k, x := range set {
					p[k] = x
				}
				p[name] = v
				next = append(next, p)
			}
		}
		sets = next
	}
	return sets, nil
}

// paramSuffix names a run folder after its parameters.
func paramSuffix(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "-%s=%s", k, strings.ReplaceAll(p[k], "/", "_"))
	}
	return b.String()
}

// GroupPlan splits the plan by the guest each scenario boots (key: "" for
// the plain one), the plain group first, the others in the plan's order.
func GroupPlan(plan []Planned, key func(*scenarios.Scenario) string) [][]Planned {
	index := map[string]int{"": 0}
	groups := [][]Planned{nil}
	for _, p := range plan {
		k := key(p.Scenario)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	if len(groups[0]) == 0 {
		groups = groups[1:]
	}
	return groups
}

// PlanMemory is the most guest RAM a planned scenario asks for, for the
// bound on guests at once (known before any kernel is built).
func PlanMemory(plan []Planned) int {
	memory := 0
	for _, p := range plan {
		memory = max(memory, p.Scenario.Machine.MemoryMB)
		if p.Scenario.NeedsDebian() {
			memory = max(memory, DebianMemoryMB)
		}
	}
	return memory
}
