package scenarios

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Presets name sets of parameter values: presets.column.busy sets the
// parameters that make the "busy" column when column=busy. A preset fills
// what the user did not set with -p; the user's values win.
//
//	params: {column: irq, receive: blocking, busy_poll: "0"}
//	presets:
//	  column:
//	    irq:  {receive: blocking, busy_poll: "0"}
//	    busy: {receive: busy, busy_poll: "50"}
type Presets map[string]map[string]map[string]string

// presetHead is the presets block as the first, lenient parse sees it,
// with its position for errors.
type presetHead struct {
	Presets yaml.Node `yaml:"presets"`
}

// decode reads a file's presets; an absent block is none.
func (h presetHead) decode(file string) (Presets, error) {
	if h.Presets.Kind == 0 {
		return nil, nil
	}
	var p Presets
	if err := h.Presets.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s:%d: presets: want param: {value: {param: value}}: %v", file,
			h.Presets.Line, err)
	}
	return p, nil
}

// applyPresets fills values from the presets the chosen values name. A
// preset may only set declared parameters that have no presets themselves,
// and the chosen value must be one of its presets.
func applyPresets(file string, presets Presets, values, overrides map[string]string) error {
	var problems []string
	for _, param := range sortedKeys(presets) {
		sets := presets[param]
		v, ok := values[param]
		if !ok {
			problems = append(problems, fmt.Sprintf("presets.%s: %s is not declared under params:", param, param))
			continue
		}
		set, ok := sets[v]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s=%s is not one of its presets: %s", param, v,
				strings.Join(sortedKeys(sets), ", ")))
			continue
		}
		for _, choice := range sortedKeys(sets) {
			for _, p := range sortedKeys(sets[choice]) {
				if _, ok := values[p]; !ok {
					problems = append(problems, fmt.Sprintf("presets.%s.%s: parameter %s is not declared under params:",
						param, choice, p))
				} else if presets[p] != nil {
					problems = append(problems, fmt.Sprintf("presets.%s.%s: %s has presets of its own", param, choice, p))
				}
			}
		}
		for p, pv := range set {
			if _, user := overrides[p]; !user {
				values[p] = pv
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	return nil
}

// mergePresets joins the files' presets; the main file (first) wins.
func mergePresets(srcs sources) Presets {
	out := Presets{}
	for k := len(srcs) - 1; k >= 0; k-- {
		for param, sets := range srcs[k].presets {
			out[param] = sets
		}
	}
	return out
}

// chosen lists the presets in force as "param=value".
func chosen(presets Presets, values map[string]string) []string {
	var out []string
	for _, p := range sortedKeys(presets) {
		out = append(out, p+"="+values[p])
	}
	return out
}
