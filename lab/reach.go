package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"napilab/results"
)

// reach sums, per kernel, the calls every run counted of the functions
// its series changes.
type reach map[string]map[string]uint64

func (rc reach) add(kernel string, c *results.Coverage) {
	if c == nil || c.Partial {
		return
	}
	if rc[kernel] == nil {
		rc[kernel] = map[string]uint64{}
	}
	for _, f := range c.Funcs {
		if f.Counted() {
			rc[kernel][f.Func] += f.Calls
		}
	}
}

// print lists, per kernel, the series' functions no run reached.
func (rc reach) print(w io.Writer) {
	for _, k := range slices.Sorted(maps.Keys(rc)) {
		var missed []string
		for _, f := range slices.Sorted(maps.Keys(rc[k])) {
			if rc[k][f] == 0 {
				missed = append(missed, f)
			}
		}
		if len(missed) > 0 {
			fmt.Fprintf(w, "NOTE  %s: no run reached %s of its series' functions: %s\n", k, plural(len(missed), "one", "these"), strings.Join(missed, ", "))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
